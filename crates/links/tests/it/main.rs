//! The drivers' integration tests against fake modems and radios on ptys, TCP and UDP, a
//! module per driver (`cargo test --release -p skywave-links --test it kiss::`). One test
//! binary: one link of the dependency tree instead of one per file, and drivers that wait
//! on real time run beside each other.

mod common;

mod ardop;
mod emulated;
mod fuzz_corpus;
mod hf;
mod kiss;
mod rfd900;
mod rnode;
mod serial;
mod vara;
