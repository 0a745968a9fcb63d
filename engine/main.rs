//! The `caldera` binary: everything lives in the library; this maps it to an exit code.

/// Evaluation allocates many small, short-lived values (one per expression result);
/// mimalloc handles that pattern far better than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // The process ends with its command: its documents go back to the system with it.
    caldera::doc::exit_without_freeing();
    caldera::cli::main()
}
