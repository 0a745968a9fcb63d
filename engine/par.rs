//! Work spread over the cores with results in input order: judge files loaded, JSON
//! files parsed and judges prepared side by side, each item on whichever thread is free
//! (items differ in size, so a shared counter balances better than fixed chunks).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` applied to every item, on up to as many threads as the machine has cores;
/// the results in the order of `items`. One item, or one core, runs on this thread.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    slots.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
                }
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        // Every index below `items.len()` was taken by exactly one worker, which either
        // filled its slot or panicked (and the scope re-raised the panic).
        .map(|r| r.unwrap_or_else(|| unreachable!("every item is computed")))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_input_order() {
        let items: Vec<u64> = (0..1000).collect();
        let out = super::map(&items, |x| x * x);
        assert_eq!(out, items.iter().map(|x| x * x).collect::<Vec<_>>());
        assert_eq!(super::map(&[7u8], |x| *x + 1), vec![8]);
        assert!(super::map(&[] as &[u8], |x| *x).is_empty());
    }

    #[test]
    fn zero_sized_items_are_each_computed_once() {
        let items = vec![(); 50];
        let count = std::sync::atomic::AtomicUsize::new(0);
        let out = super::map(&items, |_| {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        });
        assert_eq!(out.len(), 50);
        assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 50);
    }
}
