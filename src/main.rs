//! `kineticd` binary: see [`kineticd::cli`].

fn main() -> std::process::ExitCode {
    kineticd::cli::main()
}
