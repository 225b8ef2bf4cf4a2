//! The workspace as a component sees it: WASI's filesystem with ragbox's data
//! dirs taken out, and nothing but regular files and folders to open.
//!
//! wasmtime-wasi keeps every path beneath its preopen, so a component cannot
//! leave the workspace; inside it, though, everything is reachable: every
//! `.ragbox/` (the served workspace's, a sub-workspace's, the served one's
//! when a parent folder is the preopen), the user's config dir when it lies
//! inside, and, under a grant covering `/proc`, the host's own environment.
//! Opening a FIFO would also block the host thread until a writer came. This
//! layer stands in front of `wasi:filesystem/types`: the host opens every
//! path itself with `openat2(RESOLVE_BENEATH)` and `O_NONBLOCK`, then checks
//! where the path really landed (`/proc/self/fd`), so no symlink or `..`
//! reaches a hidden folder and no FIFO, socket or device is ever handed to a
//! guest. Everything else is passed to wasmtime-wasi unchanged (the preopens
//! are read-only, so every write is refused there).

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::filesystem::{Descriptor, Dir, File, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;
use wasmtime_wasi::p2::bindings::sync::filesystem::types as fs;
use wasmtime_wasi::p2::bindings::sync::io::streams;
use wasmtime_wasi::p2::{FsError, FsResult};
use wasmtime_wasi::{FsPerms, OpenMode};

/// What the guard knows for one call: the preopened folders, the folders no
/// path may reach, and the state of each directory listing in progress.
#[derive(Default)]
pub struct FsGuard {
    /// The preopens, as the kernel names them.
    roots: Vec<PathBuf>,
    /// Folders hidden wherever they are (the user's config dir).
    hidden: Vec<PathBuf>,
    listings: HashMap<u32, Listing>,
}

/// One directory listing: the folder listed (as the kernel names it), and
/// whether a name that is not UTF-8 was passed over (reported when the
/// listing ends, so one bad name does not end the listing early).
struct Listing {
    dir: PathBuf,
    skipped_illegal: bool,
}

impl FsGuard {
    /// A guard for a guest whose preopens are `roots`, hiding every data
    /// dir beneath them and each of `hidden` (and what they resolve to).
    pub fn new(roots: &[PathBuf], hidden: impl IntoIterator<Item = PathBuf>) -> Self {
        let real = |dir: &PathBuf| dir.canonicalize().unwrap_or_else(|_| dir.clone());
        let mut hidden_dirs = Vec::new();
        for dir in hidden {
            hidden_dirs.push(real(&dir));
            hidden_dirs.push(dir);
        }
        Self { roots: roots.iter().map(real).collect(), hidden: hidden_dirs, listings: HashMap::new() }
    }

    /// Whether a guest may not reach `real` (a path as the kernel names it):
    /// a data dir at any depth below its preopen, a hidden folder, a
    /// process's folder in `/proc` (its environment and memory), or
    /// anything outside every preopen (the guard fails closed).
    fn is_hidden(&self, real: &Path) -> bool {
        if self.hidden.iter().any(|h| real.starts_with(h)) {
            return true;
        }
        let Some(root) = self.roots.iter().filter(|r| real.starts_with(r)).max_by_key(|r| r.as_os_str().len()) else {
            return true;
        };
        let below = real.strip_prefix(root).unwrap_or(real);
        if below.components().any(|c| c.as_os_str() == crate::datadir::DATA_DIR) {
            return true;
        }
        let mut parts = real.components().skip(1).map(|c| c.as_os_str().to_str().unwrap_or(""));
        parts.next() == Some("proc")
            && parts.next().is_some_and(|p| {
                p == "self" || p == "thread-self" || (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            })
    }
}

/// The filesystem interface a call's guest gets: wasmtime-wasi's, guarded.
pub struct GuardedFs<'a> {
    /// wasmtime-wasi's own implementation, for what needs no guarding.
    pub view: WasiFilesystemCtxView<'a>,
    /// The call's guard.
    pub guard: &'a mut FsGuard,
}

/// [`HasData`] for linking [`GuardedFs`].
pub struct Guarded;

impl HasData for Guarded {
    type Data<'a> = GuardedFs<'a>;
}

/// Where an open file really is, from the kernel; `None` when that cannot be
/// told (no `/proc`), which callers treat as hidden: the guard fails closed.
fn real_path(fd: &impl AsFd) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd())).ok()
}

fn code(e: ErrorCode) -> FsError {
    e.into()
}

fn io_code(e: std::io::Error) -> FsError {
    // RESOLVE_BENEATH refuses a path that leaves the folder with EXDEV; cap-std says not permitted.
    if e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()) {
        return code(ErrorCode::NotPermitted);
    }
    code(ErrorCode::from(e))
}

/// How a path is opened for the guest.
#[derive(Clone, Copy, PartialEq)]
enum Purpose {
    /// To read it or list it.
    Read { directory: bool },
    /// Only to look at it (stat, readlink): `O_PATH`, which never blocks.
    Look,
}

impl GuardedFs<'_> {
    /// The directory behind `fd`: its handle, permissions and blocking mode.
    fn dir(&mut self, fd: &Resource<Descriptor>) -> FsResult<Dir> {
        match self.view.table.get(fd)? {
            Descriptor::Dir(d) => Ok(d.clone()),
            Descriptor::File(_) => Err(code(ErrorCode::NotDirectory)),
        }
    }

    /// Opens `path` beneath `dir` for `purpose`, refusing what lands in a
    /// hidden folder, and what is neither a regular file nor a folder when
    /// it is to be read.
    fn open_beneath(&self, dir: &Dir, path: &str, follow: bool, purpose: Purpose) -> FsResult<(std::fs::File, bool)> {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        let mut flags = OFlags::CLOEXEC;
        flags |= match purpose {
            Purpose::Read { directory } => {
                let dir = if directory { OFlags::DIRECTORY } else { OFlags::empty() };
                OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | dir
            }
            // openat2 refuses O_PATH with any flag but O_CLOEXEC, O_DIRECTORY and O_NOFOLLOW.
            Purpose::Look => OFlags::PATH,
        };
        if !follow {
            flags |= OFlags::NOFOLLOW;
        }
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let opened: OwnedFd =
            rustix::fs::openat2(dir.dir.as_fd(), path, flags, Mode::empty(), resolve).map_err(|e| io_code(e.into()))?;
        match real_path(&opened) {
            Some(real) if !self.guard.is_hidden(&real) => {}
            // The data dir does not exist, as far as a guest can tell.
            Some(_) => return Err(code(ErrorCode::NoEntry)),
            None => return Err(code(ErrorCode::Access)),
        }
        let file = std::fs::File::from(opened);
        let kind = file.metadata().map_err(io_code)?.file_type();
        if purpose == Purpose::Look {
            return Ok((file, kind.is_dir()));
        }
        if !kind.is_file() && !kind.is_dir() {
            // FIFOs, sockets and devices could block or never end.
            return Err(code(ErrorCode::Unsupported));
        }
        // Reads of a regular file do not block; clear the flag all the same.
        let status = rustix::fs::fcntl_getfl(&file).map_err(|e| io_code(e.into()))?;
        rustix::fs::fcntl_setfl(&file, status - OFlags::NONBLOCK).map_err(|e| io_code(e.into()))?;
        Ok((file, kind.is_dir()))
    }

    /// Runs `look` on a descriptor for `path` opened only to look at it.
    fn looking_at<T>(
        &mut self,
        fd: &Resource<Descriptor>,
        path: &str,
        follow: bool,
        look: impl FnOnce(&mut Self, Resource<Descriptor>) -> FsResult<T>,
    ) -> FsResult<T> {
        let dir = self.dir(fd)?;
        let (file, _) = self.open_beneath(&dir, path, follow, Purpose::Look)?;
        let temp = self.view.table.push(Descriptor::File(File::new(file, dir.perms, OpenMode::READ, true)))?;
        let result = look(self, Resource::new_borrow(temp.rep()));
        self.view.table.delete(temp)?;
        result
    }
}

impl fs::Host for GuardedFs<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<fs::ErrorCode> {
        fs::Host::convert_error_code(&mut self.view, err)
    }

    fn filesystem_error_code(&mut self, err: Resource<streams::Error>) -> wasmtime::Result<Option<fs::ErrorCode>> {
        fs::Host::filesystem_error_code(&mut self.view, err)
    }
}

impl fs::HostDescriptor for GuardedFs<'_> {
    fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
        oflags: fs::OpenFlags,
        flags: fs::DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let writes = oflags.intersects(fs::OpenFlags::CREATE | fs::OpenFlags::EXCLUSIVE | fs::OpenFlags::TRUNCATE)
            || flags.intersects(fs::DescriptorFlags::WRITE | fs::DescriptorFlags::MUTATE_DIRECTORY);
        let dir = self.dir(&fd)?;
        if writes || dir.perms != FsPerms::ReadOnly {
            // Only read-only preopens are guarded (and the guest gets no other);
            // wasmtime-wasi refuses every write on them.
            return fs::HostDescriptor::open_at(&mut self.view, fd, path_flags, path, oflags, flags);
        }
        let follow = path_flags.contains(fs::PathFlags::SYMLINK_FOLLOW);
        let directory = oflags.contains(fs::OpenFlags::DIRECTORY);
        let (file, is_dir) = self.open_beneath(&dir, &path, follow, Purpose::Read { directory })?;
        let descriptor = if is_dir {
            Descriptor::Dir(Dir::new(file, dir.perms, OpenMode::READ, true))
        } else {
            Descriptor::File(File::new(file, dir.perms, OpenMode::READ, true))
        };
        Ok(self.view.table.push(descriptor)?)
    }

    fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::DescriptorStat> {
        let follow = path_flags.contains(fs::PathFlags::SYMLINK_FOLLOW);
        self.looking_at(&fd, &path, follow, |s, temp| fs::HostDescriptor::stat(&mut s.view, temp))
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::MetadataHashValue> {
        let follow = path_flags.contains(fs::PathFlags::SYMLINK_FOLLOW);
        self.looking_at(&fd, &path, follow, |s, temp| fs::HostDescriptor::metadata_hash(&mut s.view, temp))
    }

    fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        // Where the link itself is decides; its target is only text.
        let dir = self.dir(&fd)?;
        self.open_beneath(&dir, &path, false, Purpose::Look)?;
        fs::HostDescriptor::readlink_at(&mut self.view, fd, path)
    }

    fn read_directory(&mut self, fd: Resource<Descriptor>) -> FsResult<Resource<fs::DirectoryEntryStream>> {
        let dir = self.dir(&fd)?;
        let Some(real) = real_path(&*dir.dir) else { return Err(code(ErrorCode::Access)) };
        if self.guard.is_hidden(&real) {
            return Err(code(ErrorCode::NoEntry));
        }
        let stream = fs::HostDescriptor::read_directory(&mut self.view, fd)?;
        self.guard.listings.insert(stream.rep(), Listing { dir: real, skipped_illegal: false });
        Ok(stream)
    }

    fn advise(&mut self, fd: Resource<Descriptor>, offset: u64, len: u64, advice: fs::Advice) -> FsResult<()> {
        fs::HostDescriptor::advise(&mut self.view, fd, offset, len, advice)
    }

    fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        fs::HostDescriptor::sync_data(&mut self.view, fd)
    }

    fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorFlags> {
        fs::HostDescriptor::get_flags(&mut self.view, fd)
    }

    fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorType> {
        fs::HostDescriptor::get_type(&mut self.view, fd)
    }

    fn set_size(&mut self, fd: Resource<Descriptor>, size: u64) -> FsResult<()> {
        fs::HostDescriptor::set_size(&mut self.view, fd, size)
    }

    fn set_times(&mut self, fd: Resource<Descriptor>, atim: fs::NewTimestamp, mtim: fs::NewTimestamp) -> FsResult<()> {
        fs::HostDescriptor::set_times(&mut self.view, fd, atim, mtim)
    }

    fn read(&mut self, fd: Resource<Descriptor>, len: u64, offset: u64) -> FsResult<(Vec<u8>, bool)> {
        fs::HostDescriptor::read(&mut self.view, fd, len, offset)
    }

    fn write(&mut self, fd: Resource<Descriptor>, buffer: Vec<u8>, offset: u64) -> FsResult<u64> {
        fs::HostDescriptor::write(&mut self.view, fd, buffer, offset)
    }

    fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        fs::HostDescriptor::sync(&mut self.view, fd)
    }

    fn create_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        fs::HostDescriptor::create_directory_at(&mut self.view, fd, path)
    }

    fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::DescriptorStat> {
        fs::HostDescriptor::stat(&mut self.view, fd)
    }

    fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
        atim: fs::NewTimestamp,
        mtim: fs::NewTimestamp,
    ) -> FsResult<()> {
        fs::HostDescriptor::set_times_at(&mut self.view, fd, path_flags, path, atim, mtim)
    }

    fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path_flags: fs::PathFlags,
        old_path: String,
        new_descriptor: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        fs::HostDescriptor::link_at(&mut self.view, fd, old_path_flags, old_path, new_descriptor, new_path)
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        fs::HostDescriptor::drop(&mut self.view, fd)
    }

    fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        fs::HostDescriptor::remove_directory_at(&mut self.view, fd, path)
    }

    fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        fs::HostDescriptor::rename_at(&mut self.view, fd, old_path, new_fd, new_path)
    }

    fn symlink_at(&mut self, fd: Resource<Descriptor>, src_path: String, dest_path: String) -> FsResult<()> {
        fs::HostDescriptor::symlink_at(&mut self.view, fd, src_path, dest_path)
    }

    fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        fs::HostDescriptor::unlink_file_at(&mut self.view, fd, path)
    }

    fn read_via_stream(&mut self, fd: Resource<Descriptor>, offset: u64) -> FsResult<Resource<streams::InputStream>> {
        fs::HostDescriptor::read_via_stream(&mut self.view, fd, offset)
    }

    fn write_via_stream(&mut self, fd: Resource<Descriptor>, offset: u64) -> FsResult<Resource<streams::OutputStream>> {
        fs::HostDescriptor::write_via_stream(&mut self.view, fd, offset)
    }

    fn append_via_stream(&mut self, fd: Resource<Descriptor>) -> FsResult<Resource<streams::OutputStream>> {
        fs::HostDescriptor::append_via_stream(&mut self.view, fd)
    }

    fn is_same_object(&mut self, a: Resource<Descriptor>, b: Resource<Descriptor>) -> wasmtime::Result<bool> {
        fs::HostDescriptor::is_same_object(&mut self.view, a, b)
    }

    fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> FsResult<fs::MetadataHashValue> {
        fs::HostDescriptor::metadata_hash(&mut self.view, fd)
    }
}

impl fs::HostDirectoryEntryStream for GuardedFs<'_> {
    fn read_directory_entry(
        &mut self,
        stream: Resource<fs::DirectoryEntryStream>,
    ) -> FsResult<Option<fs::DirectoryEntry>> {
        let rep = stream.rep();
        loop {
            let next = fs::HostDirectoryEntryStream::read_directory_entry(&mut self.view, Resource::new_borrow(rep));
            let hidden = match (&next, self.guard.listings.get(&rep)) {
                (_, None) => return next,
                (Ok(Some(entry)), Some(listing)) => self.guard.is_hidden(&listing.dir.join(&entry.name)),
                _ => false,
            };
            if hidden {
                continue;
            }
            let listing = self.guard.listings.get_mut(&rep).expect("looked up above");
            match next {
                Err(e) if matches!(e.downcast_ref(), Some(ErrorCode::IllegalByteSequence)) => {
                    listing.skipped_illegal = true;
                    continue;
                }
                Ok(None) if listing.skipped_illegal => {
                    listing.skipped_illegal = false;
                    return Err(code(ErrorCode::IllegalByteSequence));
                }
                other => return other,
            }
        }
    }

    fn drop(&mut self, stream: Resource<fs::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.guard.listings.remove(&stream.rep());
        fs::HostDirectoryEntryStream::drop(&mut self.view, stream)
    }
}
