//! The protocol core's integration tests: endpoints joined by simulated links in virtual
//! time (`common`), a module per subject (`cargo test --release -p skywave-proto --test it
//! report_copies::`). One test binary: one link of the dependency tree instead of one per
//! file.

mod common;

mod asked_again;
mod bad_fec;
mod bad_input;
mod beacons;
mod continuation;
mod cut_manifest;
mod done_gap;
mod empty_side;
mod fanout_endpoint;
mod frag_next;
mod frag_parity;
mod frame_order;
mod fuzz_corpus;
mod listed_sets;
mod missed;
mod over_end;
mod paused;
mod properties;
mod queues;
mod reliable;
mod removal;
mod report_copies;
mod short_tags;
mod turns;
mod withhold;
