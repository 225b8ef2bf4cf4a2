//! Values the kernels read, owned or lent by memory that other processes share.
//!
//! A model's packed weights are the same bytes in every ragbox process on a
//! machine. Kept in a file that each process maps read-only, they sit in the
//! page cache once, however many servers run; a [`Buf`] is either such a
//! window of a mapping or an ordinary vector.

use std::sync::Arc;

/// Memory a [`Buf`] may borrow from: a read-only mapping kept alive by its `Arc`.
pub trait Backing: Send + Sync {
    /// The whole mapping.
    fn bytes(&self) -> &[u8];
}

/// Element types for which every bit pattern is a value (so bytes may be read as them).
pub trait Plain: Copy + Default + Send + Sync + 'static {}
impl Plain for f32 {}
impl Plain for u32 {}
impl Plain for i8 {}

/// A slice of `T`: a vector, or a window of a shared mapping.
#[derive(Clone)]
pub enum Buf<T: Plain> {
    /// Owned by this process.
    Owned(Vec<T>),
    /// `len` values at byte `offset` of `backing` (checked aligned and in bounds).
    Mapped {
        /// The mapping.
        backing: Arc<dyn Backing>,
        /// Where the values start, in bytes.
        offset: usize,
        /// How many values.
        len: usize,
    },
}

impl<T: Plain> Default for Buf<T> {
    fn default() -> Self {
        Self::Owned(Vec::new())
    }
}

impl<T: Plain> std::fmt::Debug for Buf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Owned(v) => write!(f, "Buf::Owned({} values)", v.len()),
            Self::Mapped { offset, len, .. } => write!(f, "Buf::Mapped({len} values at byte {offset})"),
        }
    }
}

impl<T: Plain> From<Vec<T>> for Buf<T> {
    fn from(v: Vec<T>) -> Self {
        Self::Owned(v)
    }
}

impl<T: Plain> Buf<T> {
    /// `len` values at byte `offset` of `backing`; `None` when that window is
    /// out of bounds or not aligned for `T`.
    pub fn mapped(backing: Arc<dyn Backing>, offset: usize, len: usize) -> Option<Self> {
        let bytes = backing.bytes();
        let end = len.checked_mul(size_of::<T>())?.checked_add(offset)?;
        let aligned = (bytes.as_ptr() as usize).checked_add(offset)? % align_of::<T>() == 0;
        (end <= bytes.len() && aligned).then_some(Self::Mapped { backing, offset, len })
    }

    /// The values as bytes (native order), as a file of them is written.
    pub fn as_bytes(&self) -> &[u8] {
        let values: &[T] = self;
        // SAFETY: `T` is plain data without padding (f32, u32); the bytes cover exactly the values.
        unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), size_of_val(values)) }
    }

    /// The values as an owned vector to change, copying a mapped window first.
    pub fn to_mut(&mut self) -> &mut Vec<T> {
        if let Self::Mapped { .. } = self {
            *self = Self::Owned(self.to_vec());
        }
        match self {
            Self::Owned(v) => v,
            Self::Mapped { .. } => unreachable!("made owned above"),
        }
    }

    /// Whether the values are borrowed from a shared mapping.
    pub fn is_mapped(&self) -> bool {
        matches!(self, Self::Mapped { .. })
    }
}

impl<T: Plain> std::ops::Deref for Buf<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Self::Owned(v) => v,
            Self::Mapped { backing, offset, len } => {
                // SAFETY: `mapped` checked that the window lies within the mapping
                // and is aligned for `T`; every bit pattern is a `T` (`Plain`);
                // the mapping is read-only and lives as long as `backing`.
                unsafe { std::slice::from_raw_parts(backing.bytes().as_ptr().add(*offset).cast(), *len) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory aligned for u32, seen as bytes.
    struct Words(Vec<u32>);
    impl Backing for Words {
        fn bytes(&self) -> &[u8] {
            // SAFETY: the vector's values are initialised; u8 has no alignment.
            unsafe { std::slice::from_raw_parts(self.0.as_ptr().cast(), self.0.len() * 4) }
        }
    }

    #[test]
    fn a_window_reads_the_values_written_and_refuses_bad_ones() {
        let values: Buf<f32> = vec![1.5f32, -2.0, 3.25].into();
        let mut words = vec![0u32; 8];
        for (w, v) in words[2..5].iter_mut().zip(values.iter()) {
            *w = v.to_bits();
        }
        let backing: Arc<dyn Backing> = Arc::new(Words(words));
        assert_eq!(&backing.bytes()[8..20], values.as_bytes());
        let window = Buf::<f32>::mapped(backing.clone(), 8, 3).expect("in bounds, aligned");
        assert_eq!(&*window, &[1.5, -2.0, 3.25]);
        assert!(window.is_mapped());
        let mut owned = window.clone();
        owned.to_mut()[0] = 9.0;
        assert_eq!(&*owned, &[9.0, -2.0, 3.25]);
        assert_eq!(&*window, &[1.5, -2.0, 3.25], "the mapping is never written");
        assert!(Buf::<f32>::mapped(backing.clone(), 24, 3).is_none(), "past the end");
        assert!(Buf::<f32>::mapped(backing.clone(), 9, 1).is_none(), "misaligned");
        assert!(Buf::<f32>::mapped(backing, usize::MAX, 2).is_none(), "overflow");
    }
}
