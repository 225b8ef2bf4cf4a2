//! A tantivy [`Directory`] over a folder held open: every file tantivy
//! reads, writes, locks or deletes is opened beneath the handle taken when
//! the index was opened, one plain name at a time and never through a link.
//! A data dir swapped for a link while a server runs (a `git pull` that
//! tracks one) is then never written through: what tantivy writes goes to
//! the folder it opened, wherever that folder is now (tantivy's own
//! `MmapDirectory` joins each name to a path, and follows what the path
//! leads to at each write).

use cap_std::fs::{Dir, OpenOptions};
use std::fmt;
use std::io::{self, BufWriter, Read as _, Write as _};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, OwnedBytes, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
};

/// The folder of one keyword index, held open.
#[derive(Clone)]
pub struct HeldDirectory {
    dir: Arc<Dir>,
    /// Where it was when opened, for messages.
    shown: PathBuf,
}

impl fmt::Debug for HeldDirectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HeldDirectory({})", self.shown.display())
    }
}

impl HeldDirectory {
    /// tantivy's files in `dir` (shown as `shown`).
    pub fn new(dir: Dir, shown: &Path) -> Self {
        Self { dir: Arc::new(dir), shown: shown.to_path_buf() }
    }

    /// Opens the plain name `path` with `options`, never through a link.
    fn open(&self, path: &Path, options: &mut OpenOptions) -> io::Result<cap_std::fs::File> {
        let name = plain_name(path)?;
        self.dir.open_with(name, crate::platform::no_follow_no_block(options))
    }
}

/// `path` when it is one plain name: tantivy names only files in its own
/// folder (a `.managed.json` that names others is refused before the index opens).
fn plain_name(path: &Path) -> io::Result<&Path> {
    let mut parts = path.components();
    match (parts.next(), parts.next()) {
        (Some(Component::Normal(_)), None) => Ok(path),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a name in the index's folder", path.display()),
        )),
    }
}

/// A mapped file: its bytes stay where they are for as long as it is held.
struct Mapped(memmap2::Mmap);

impl std::ops::Deref for Mapped {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

// SAFETY: the bytes of a mapping do not move when the `Mapped` that holds it does.
unsafe impl stable_deref_trait::StableDeref for Mapped {}

/// A file being written: flushed to disk when tantivy finishes it.
struct Writing(cap_std::fs::File);

impl io::Write for Writing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        // Durable only once terminated (and the folder synced), as tantivy expects.
        Ok(())
    }
}

impl TerminatingWrite for Writing {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.0.flush()?;
        self.0.sync_data()
    }
}

/// A lock on a file of the folder, released when dropped.
struct Locked {
    _file: std::fs::File,
}

impl Directory for HeldDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        let file = self.open(path, OpenOptions::new().read(true)).map_err(|e| read_error(e, path))?;
        let file = file.into_std();
        let meta = file.metadata().map_err(|e| read_error(e, path))?;
        if !meta.is_file() {
            return Err(read_error(io::Error::other("not a regular file"), path));
        }
        if meta.len() == 0 {
            return Ok(Arc::new(OwnedBytes::empty()));
        }
        // SAFETY: tantivy never changes a file once written (it writes new
        // ones and deletes old ones), and no other program writes here.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| read_error(e, path))?;
        Ok(Arc::new(OwnedBytes::new(Mapped(map))))
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        let removed = plain_name(path).and_then(|name| self.dir.remove_file(name));
        removed.map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => DeleteError::FileDoesNotExist(path.to_path_buf()),
            _ => DeleteError::IoError { io_error: Arc::new(e), filepath: path.to_path_buf() },
        })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        let name = plain_name(path).map_err(|e| read_error(e, path))?;
        match self.dir.symlink_metadata(name) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(read_error(e, path)),
        }
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let file = self.open(path, crate::platform::private_file(OpenOptions::new().write(true).create_new(true)));
        let file = file.map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => OpenWriteError::FileAlreadyExists(path.to_path_buf()),
            _ => OpenWriteError::wrap_io_error(e, path.to_path_buf()),
        })?;
        Ok(BufWriter::new(Box::new(Writing(file))))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        let mut file = self.open(path, OpenOptions::new().read(true)).map_err(|e| read_error(e, path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| read_error(e, path))?;
        Ok(bytes)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let name = plain_name(path)?;
        let tmp = format!(".{}-{:016x}.tmp", name.display(), crate::platform::random_u64());
        let written = self
            .open(Path::new(&tmp), crate::platform::private_file(OpenOptions::new().write(true).create_new(true)))
            .and_then(|mut file| {
                file.write_all(data)?;
                file.sync_data()
            });
        let renamed = written.and_then(|()| self.dir.rename(&tmp, &self.dir, name));
        if renamed.is_err() {
            let _ = self.dir.remove_file(&tmp);
        }
        renamed?;
        self.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(false);
        let file = self
            .open(&lock.filepath, crate::platform::private_file(&mut options))
            .map_err(LockError::wrap_io_error)?
            .into_std();
        // Released when the file is closed: by the lock's drop, or the process's end.
        let locked = match lock.is_blocking {
            true => file.lock().map(|()| true),
            false => match file.try_lock() {
                Ok(()) => Ok(true),
                Err(std::fs::TryLockError::WouldBlock) => Ok(false),
                Err(std::fs::TryLockError::Error(e)) => Err(e),
            },
        };
        match locked {
            Ok(true) => Ok(DirectoryLock::from(Box::new(Locked { _file: file }))),
            Ok(false) => Err(LockError::LockBusy),
            Err(e) => Err(LockError::wrap_io_error(e)),
        }
    }

    fn watch(&self, _callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        // The readers reload when the corpus says so (`ReloadPolicy::Manual`): nothing watches.
        Ok(WatchHandle::empty())
    }

    fn sync_directory(&self) -> io::Result<()> {
        crate::platform::sync_dir(&self.dir)
    }
}

fn read_error(e: io::Error, path: &Path) -> OpenReadError {
    match e.kind() {
        io::ErrorKind::NotFound => OpenReadError::FileDoesNotExist(path.to_path_buf()),
        _ => OpenReadError::wrap_io_error(e, path.to_path_buf()),
    }
}
