//! End-to-end tests of the `skywave` binary: real daemons, the link emulator, real modem
//! programs and a browser, driven as a user would. One test binary with a module per
//! subject (`cargo test --release -p skywave --test e2e direwolf::`): one link of the
//! whole dependency tree instead of one per file, and tests that mostly wait on real
//! time (modems, daemons) run beside each other instead of one binary after another.

mod support;

mod amateur;
mod ardop;
mod budget;
mod cli;
mod conventions;
mod daemon_api;
mod daemon_e2e;
mod delete;
mod demo;
mod direwolf;
mod emulate;
mod hf_turns;
mod hostnames;
mod kiss_ports;
mod lab;
mod lab_real;
mod lab_sweep;
mod logs;
mod netkey;
mod pmtu;
mod present;
mod radio_turns;
mod restart;
mod sealed;
mod trust;
mod vara;
mod webui;
mod why;
