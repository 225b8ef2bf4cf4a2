//! Files read in place: the packed model and the vector index's codes are
//! mapped read-only and lent to [`Buf`](ragbox_kernels::buf::Buf)s, so every
//! process that maps one file shares its pages instead of holding a copy.

use ragbox_kernels::buf::Backing;
use std::sync::Arc;

/// A read-only mapping of a whole file.
pub struct Mapped(memmap2::Mmap);

impl Backing for Mapped {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Maps `file` read-only. Only for files ragbox writes whole and renames
/// into place, never changing one after.
pub fn map(file: &std::fs::File) -> std::io::Result<Arc<Mapped>> {
    // SAFETY: the mapping is read-only and its files are never written in
    // place (see above). A file truncated by another program while mapped
    // would fault, as any mapped index does.
    let map = unsafe { memmap2::Mmap::map(file)? };
    Ok(Arc::new(Mapped(map)))
}
