//! Buffers the encoder reuses from one forward pass to the next.
//!
//! A forward pass over 2,048 tokens fills ~110 MB of activations and rounded
//! operands; allocated zeroed each time, they cost ~3 % of an embedding run
//! in memset and page faults (perf, SciFact abstracts). A taken buffer holds
//! whatever its last user left in it: every user writes each value before
//! reading it. A taken buffer starts on a cache line, whatever the allocator
//! aligns to (glibc: 16 bytes), so no 64-byte vector or tile row of it
//! straddles two lines (a straddling tile row cost the products 30–40 % of
//! their rate: `amx.rs`).
//! [`release`] drops what is kept, for a process that falls idle.

use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

/// Buffers kept at most per pool: enough for a few passes at once.
const KEPT: usize = 16;

/// A cache line's bytes: where every taken buffer starts.
const LINE: usize = 64;

/// Values of room a buffer needs past its `n` for [`on_cache_line`].
pub const fn line_slack<T>() -> usize {
    (LINE / if size_of::<T>() == 0 { 1 } else { size_of::<T>() }).saturating_sub(1)
}

/// Where in `room` (at least `n + line_slack::<T>()` long) the first cache
/// line starts: `n` values from there straddle no line they need not.
fn line_start<T>(room: &[T]) -> usize {
    room.as_ptr().align_offset(LINE).min(line_slack::<T>())
}

/// The `n` values of `room` (at least `n + line_slack::<T>()` long) that
/// start on a cache line, for a buffer kept outside the pools.
pub fn on_cache_line<T>(room: &mut [T], n: usize) -> &mut [T] {
    let start = line_start(room);
    &mut room[start..][..n]
}

/// Spare buffers of one element type.
pub struct Pool<T>(Mutex<Vec<Vec<T>>>);

/// f32 activations.
pub static F32: Pool<f32> = Pool::new();
/// bf16 pairs and int8 quads.
pub static U32: Pool<u32> = Pool::new();

impl<T: Copy + Default> Pool<T> {
    const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    /// A buffer of `len` values starting on a cache line, not cleared: the
    /// smallest kept one that is long enough, else the longest grown (only its
    /// new part is written).
    pub fn take(&'static self, len: usize) -> Taken<T> {
        let room = len + line_slack::<T>();
        let mut buf = {
            let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            let fits = (0..kept.len()).filter(|&i| kept[i].len() >= room).min_by_key(|&i| kept[i].len());
            let pick = fits.or_else(|| (0..kept.len()).max_by_key(|&i| kept[i].len()));
            pick.map(|i| kept.swap_remove(i)).unwrap_or_default()
        };
        if buf.len() < room {
            buf.resize(room, T::default());
        }
        let start = line_start(&buf);
        Taken { pool: self, buf, start, len }
    }

    fn put(&self, buf: Vec<T>) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < KEPT {
            kept.push(buf);
        }
    }

    fn clear(&self) {
        let drained = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
        drop(drained);
    }
}

/// A buffer taken from a [`Pool`]; it goes back when dropped.
pub struct Taken<T: Copy + Default + 'static> {
    pool: &'static Pool<T>,
    buf: Vec<T>,
    /// Where the `len` values start in `buf`: its first cache line.
    start: usize,
    len: usize,
}

impl<T: Copy + Default> Deref for Taken<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf[self.start..][..self.len]
    }
}

impl<T: Copy + Default> DerefMut for Taken<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf[self.start..][..self.len]
    }
}

impl<T: Copy + Default> Drop for Taken<T> {
    fn drop(&mut self) {
        self.pool.put(std::mem::take(&mut self.buf));
    }
}

/// Drops every kept buffer (their memory goes back to the allocator).
pub fn release() {
    F32.clear();
    U32.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_comes_back_to_the_pool_and_the_best_fit_is_taken() {
        static POOL: Pool<u32> = Pool::new();
        let mut big = POOL.take(100);
        big[99] = 7;
        let big_at = big.as_ptr();
        let small = POOL.take(10);
        drop(big);
        drop(small);
        // The smallest long enough: the 10 for 5, then the 100 as its last user left it.
        let five = POOL.take(5);
        assert_eq!(five.len(), 5);
        let hundred = POOL.take(100);
        assert_eq!(hundred.as_ptr(), big_at, "the kept 100 is taken again, at the same start");
        assert_eq!(hundred[99], 7, "a kept buffer is reused, not cleared");
        drop((five, hundred));
        // Too long for any: the longest grows.
        let grown = POOL.take(200);
        assert_eq!(grown[150], 0);
        drop(grown);
        POOL.clear();
        assert!(POOL.0.lock().unwrap().is_empty());
    }

    #[test]
    fn every_taken_buffer_starts_on_a_cache_line() {
        static WORDS: Pool<u32> = Pool::new();
        static BYTES: Pool<u8> = Pool::new();
        // Sizes on both sides of glibc's mmap threshold (its blocks start 16 bytes into a page).
        for len in [1, 3, 15, 16, 17, 1000, 40_000, 300_000, 3_000_000] {
            let words = WORDS.take(len);
            let bytes = BYTES.take(len);
            assert_eq!(words.len(), len);
            assert_eq!(words.as_ptr() as usize % LINE, 0, "{len} words");
            assert_eq!(bytes.as_ptr() as usize % LINE, 0, "{len} bytes");
            drop((words, bytes));
        }
        WORDS.clear();
        BYTES.clear();
    }
}
