//! `kineticd` binary: see [`kineticd::cli`].
//!
//! Invariant: the process allocates through mimalloc (the library and its tests keep
//! the system allocator); see the api_reads benchmark in the README for why.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    kineticd::cli::main()
}
