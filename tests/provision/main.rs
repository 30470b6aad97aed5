//! Provisioning end to end: the real app and workers over HTTP, a real PostgreSQL, and
//! the production cloud clients against the simulator at speed 0.

#[path = "../common/mod.rs"]
mod common;

mod access;
mod access_sync;
mod access_view;
mod adopt;
mod auto_zones;
mod compat;
mod computeclass;
mod diagnose;
mod down;
mod drill;
mod ensure;
mod etags;
mod faults;
mod flex;
mod flex_sim;
mod idle;
mod ordering;
mod policy;
mod pools;
mod preview;
mod preview_methods;
mod records;
mod reservations;
mod resize;
mod resize_modes;
mod sharing;
#[path = "../serve_process/journal.rs"]
mod sim_journal;
mod support;
mod up;
mod usage;
