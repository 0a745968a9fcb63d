//! The `caldera` binary: everything lives in the library; this maps it to an exit code.

/// Evaluation allocates many small, short-lived values (one per expression result);
/// mimalloc handles that pattern far better than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    return_freed_memory_sooner();
    caldera::on_streaming(keep_freed_memory_for_the_next_chunk);
    // The process ends with its command: its documents go back to the system with it.
    caldera::exit_without_freeing();
    caldera::main()
}

/// `mi_option_purge_delay` in mimalloc's option enum (`mimalloc.h`, v2 and v3 alike);
/// the test below checks that it names the option whose default is one second.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Pages freed by evaluation go back to the system after 10 ms instead of mimalloc's
/// default of one second. A large run frees intermediate values faster than a second
/// goes by, so with the default they count in the peak: on 1 GB of input the peak
/// resident memory drops from about 1.74 GB to 1.66 GB at the same speed
/// (`cargo bench --bench throughput -- --repos 1000`). Zero did no better and spent
/// more time in the kernel.
#[allow(unsafe_code)]
fn return_freed_memory_sooner() {
    // SAFETY: `mi_option_set` stores one integer in mimalloc's option table; it takes
    // no pointer and is called before any other thread exists.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 10) };
}

/// A streamed run frees a chunk of documents and at once parses the next: pages freed
/// go back to the system after mimalloc's default second again, not 10 ms, so the next
/// chunk reuses them instead of faulting fresh ones in. On 1 GB of scans the streamed
/// run's kernel time falls from 0.8 s to 0.3 s and its peak grows from about 280 MB to
/// 330 MB (`benches/shards.sh`).
#[allow(unsafe_code)]
fn keep_freed_memory_for_the_next_chunk() {
    // SAFETY: one integer stored in mimalloc's option table, no pointer; called on the
    // run's thread before the streamed read spawns its threads, when no other thread
    // of caldera's is running.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 1000) };
}

#[cfg(test)]
mod tests {
    /// The option index names the purge delay: its default is mimalloc's one second
    /// (v3), and setting it is seen by the allocator.
    #[test]
    #[allow(unsafe_code)]
    fn the_purge_delay_option_is_the_one_set() {
        // SAFETY: reads and writes of one option word, no pointers.
        let before = unsafe { libmimalloc_sys::mi_option_get(super::PURGE_DELAY) };
        assert_eq!(before, 1000);
        super::return_freed_memory_sooner();
        let after = unsafe { libmimalloc_sys::mi_option_get(super::PURGE_DELAY) };
        assert_eq!(after, 10);
    }
}
