//! The workspace as a component sees it: WASI's filesystem with ragbox's data
//! dirs taken out, no link followed, and nothing but regular files and
//! folders to open.
//!
//! wasmtime-wasi keeps every path beneath its preopen, so a component cannot
//! leave the workspace; inside it, though, everything is reachable: every
//! `.ragbox/` (the served workspace's, a sub-workspace's, the served one's
//! when a parent folder is the preopen), the user's config dir when it lies
//! inside, and, under a grant covering `/proc`, the host's own environment.
//! Opening a FIFO would also block the host thread until a writer came.
//!
//! This layer stands in front of `wasi:filesystem/types` and does the same on
//! every OS, with cap-std only: the host resolves a guest's path itself, one
//! name at a time through held folder handles, and never follows a link or
//! junction (a link is refused; only a `stat` that does not follow sees the link itself). With no link
//! on the way, the path as written is where it lands, so hidden folders are
//! recognised by name (without regard to case, for case-insensitive
//! filesystems) and, for names that alias them (Windows' short names), by
//! file identity. No FIFO, socket or device is ever handed to a guest.
//! Everything else goes to wasmtime-wasi unchanged (the preopens are
//! read-only, so every write is refused there).

use crate::platform::{self, FileId};
use cap_fs_ext::DirExt as _;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::filesystem::{Descriptor, Dir, File, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;
use wasmtime_wasi::p2::bindings::sync::filesystem::types as fs;
use wasmtime_wasi::p2::bindings::sync::io::streams;
use wasmtime_wasi::p2::{FsError, FsResult};
use wasmtime_wasi::{FsPerms, OpenMode};

/// What the guard knows for one call: the preopened folders, the folders no
/// path may reach, where each folder handed to the guest is, and the state
/// of each directory listing in progress.
#[derive(Default)]
pub struct FsGuard {
    /// The preopens: where each really is, and its identity.
    roots: Vec<(PathBuf, FileId)>,
    /// Folders hidden wherever they are (the user's config dir), by path.
    hidden: Vec<PathBuf>,
    /// The same folders by identity, for names that alias them.
    hidden_ids: Vec<FileId>,
    /// Where each folder descriptor the guest holds is (real paths).
    places: HashMap<u32, PathBuf>,
    /// The descriptors this guard opened that the guest still holds.
    opened: HashSet<u32>,
    listings: HashMap<u32, Listing>,
}

/// The longest path a guest may pass (resolving one costs the host time
/// that the call's deadline cannot interrupt).
const MAX_PATH_BYTES: usize = 4096;

/// How many files and folders one call may hold open at once.
const MAX_OPEN: usize = 1024;

/// One directory listing: the folder listed, and whether a name that is not
/// UTF-8 was passed over (reported when the listing ends, so one bad name
/// does not end the listing early).
struct Listing {
    dir: PathBuf,
    skipped_illegal: bool,
}

/// The identity of the folder at `path`, when it can be opened.
fn dir_id(path: &Path) -> Option<FileId> {
    let dir = cap_std::fs::Dir::open_ambient_dir(path, cap_std::ambient_authority()).ok()?;
    Some(platform::file_id(&dir.dir_metadata().ok()?))
}

/// Whether `name` is a data dir's, as a case-insensitive filesystem sees it.
fn is_data_dir_name(name: &str) -> bool {
    name.eq_ignore_ascii_case(crate::datadir::DATA_DIR)
}

impl FsGuard {
    /// A guard for a guest whose preopens are `roots`, hiding every data
    /// dir beneath them and each of `hidden` (and what they resolve to).
    pub fn new(roots: &[PathBuf], hidden: impl IntoIterator<Item = PathBuf>) -> Self {
        let real = |dir: &PathBuf| platform::canonical(dir).unwrap_or_else(|_| dir.clone());
        let mut guard = FsGuard::default();
        for root in roots {
            // A root that cannot be opened gets no identity: no descriptor will match it.
            let id = dir_id(root).unwrap_or(FileId::NONE);
            guard.roots.push((real(root), id));
        }
        for dir in hidden {
            guard.hidden_ids.extend(dir_id(&dir));
            guard.hidden.push(real(&dir));
            guard.hidden.push(dir);
        }
        guard
    }

    /// Whether a guest may not reach `real` (a path with no link on it): a
    /// data dir at any depth below its preopen, a hidden folder, a process's
    /// folder in `/proc` (its environment and memory), or anything outside
    /// every preopen (the guard fails closed).
    fn is_hidden(&self, real: &Path) -> bool {
        if self.hidden.iter().any(|h| real.starts_with(h)) {
            return true;
        }
        let Some((root, _)) =
            self.roots.iter().filter(|(r, _)| real.starts_with(r)).max_by_key(|(r, _)| r.as_os_str().len())
        else {
            return true;
        };
        let below = real.strip_prefix(root).unwrap_or(real);
        if below.components().any(|c| c.as_os_str().to_str().is_some_and(is_data_dir_name)) {
            return true;
        }
        platform::in_process_folder(real)
    }

    /// Whether the folder `opened`, reached as `name` inside `parent`, is a
    /// hidden one under another name: a hidden folder's identity, or that
    /// of the data dir beside it (a short name, or another case, for it).
    fn aliases_hidden(&self, parent: &cap_std::fs::Dir, opened: FileId) -> bool {
        if opened == FileId::NONE {
            return false;
        }
        if self.hidden_ids.contains(&opened) {
            return true;
        }
        platform::dir_identity(parent, crate::datadir::DATA_DIR) == Some(opened)
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

fn code(e: ErrorCode) -> FsError {
    e.into()
}

fn io_code(e: std::io::Error) -> FsError {
    code(ErrorCode::from(e))
}

/// The names `path` walks through, from the folder it is relative to, with
/// `.` dropped and `..` taken lexically (right, as no link is ever
/// followed); refused when it climbs above that folder or is absolute, as
/// wasmtime-wasi refuses it.
fn names(path: &str) -> FsResult<Vec<&str>> {
    if path.starts_with('/') {
        return Err(code(ErrorCode::NotPermitted));
    }
    let mut out = Vec::new();
    for name in path.split('/') {
        match name {
            "" | "." => {}
            ".." => {
                out.pop().ok_or_else(|| code(ErrorCode::NotPermitted))?;
            }
            // A name the OS would read as more than one (`a\..\b` on Windows).
            name if !platform::is_plain_name(name) => return Err(code(ErrorCode::NotPermitted)),
            name => out.push(name),
        }
    }
    Ok(out)
}

/// A path resolved for the guest: the folder holding its last name (or the
/// path itself, when it names no entry below its start), and where it is.
struct Resolved<'p> {
    parent: cap_std::fs::Dir,
    last: Option<&'p str>,
    real: PathBuf,
}

impl GuardedFs<'_> {
    /// The directory behind `fd`, and where it really is.
    fn dir(&mut self, fd: &Resource<Descriptor>) -> FsResult<(Dir, PathBuf)> {
        let dir = match self.view.table.get(fd)? {
            Descriptor::Dir(d) => d.clone(),
            Descriptor::File(_) => return Err(code(ErrorCode::NotDirectory)),
        };
        if let Some(place) = self.guard.places.get(&fd.rep()) {
            return Ok((dir, place.clone()));
        }
        // Not one the guard opened: a preopen, known by its identity.
        let id = platform::file_id(&held(&dir)?.dir_metadata().map_err(io_code)?);
        let root = self.guard.roots.iter().find(|(_, root)| id != FileId::NONE && *root == id);
        let Some((root, _)) = root else { return Err(code(ErrorCode::Access)) };
        let root = root.clone();
        self.guard.places.insert(fd.rep(), root.clone());
        Ok((dir, root))
    }

    /// Walks `path` from `fd` to the folder holding its last name, one
    /// folder at a time and never through a link, refusing every hidden
    /// folder on the way, by name or by identity.
    fn resolve<'p>(&mut self, fd: &Resource<Descriptor>, path: &'p str) -> FsResult<Resolved<'p>> {
        if path.len() > MAX_PATH_BYTES {
            return Err(code(ErrorCode::NameTooLong));
        }
        let (dir, mut real) = self.dir(fd)?;
        let mut names = names(path)?;
        for name in &names {
            real.push(name);
        }
        if self.guard.is_hidden(&real) {
            // The data dir does not exist, as far as a guest can tell.
            return Err(code(ErrorCode::NoEntry));
        }
        let last = names.pop();
        let mut parent = held(&dir)?;
        for name in names {
            let next = parent.open_dir_nofollow(name).map_err(|e| not_followed(&parent, name, e))?;
            let id = platform::file_id(&next.dir_metadata().map_err(io_code)?);
            if self.guard.aliases_hidden(&parent, id) {
                return Err(code(ErrorCode::NoEntry));
            }
            parent = next;
        }
        Ok(Resolved { parent, last, real })
    }

    /// Opens `path` beneath `fd` to read it or list it: a regular file or a
    /// folder, reached through no link, in no hidden folder.
    fn open_beneath(&mut self, fd: &Resource<Descriptor>, path: &str, directory: bool) -> FsResult<Opened> {
        let Resolved { parent, last, real } = self.resolve(fd, path)?;
        let Some(name) = last else {
            // The folder itself, once more.
            return Ok(Opened::Dir(parent.into_std_file(), real));
        };
        let kind = parent.symlink_metadata(name).map_err(io_code)?.file_type();
        if kind.is_dir() {
            let opened = parent.open_dir_nofollow(name).map_err(|e| not_followed(&parent, name, e))?;
            let id = platform::file_id(&opened.dir_metadata().map_err(io_code)?);
            if self.guard.aliases_hidden(&parent, id) {
                return Err(code(ErrorCode::NoEntry));
            }
            return Ok(Opened::Dir(opened.into_std_file(), real));
        }
        if kind.is_symlink() {
            return Err(code(ErrorCode::NotPermitted));
        }
        if !kind.is_file() {
            // FIFOs, sockets and devices could block or never end.
            return Err(code(ErrorCode::Unsupported));
        }
        if directory {
            return Err(code(ErrorCode::NotDirectory));
        }
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true);
        // Without blocking: the entry may have been swapped for a FIFO since
        // it was looked at. Reads of a regular file ignore the flag.
        let file = parent
            .open_with(name, platform::no_follow_no_block(&mut options))
            .map_err(|e| not_followed(&parent, name, e))?;
        if !file.metadata().map_err(io_code)?.is_file() {
            return Err(code(ErrorCode::Unsupported));
        }
        Ok(Opened::File(file.into_std()))
    }

    /// Runs `look` with a descriptor for the folder holding `path`'s last
    /// name, and that name (`.` for the folder itself). A link is never
    /// followed: asked to `follow` one, this refuses, as an open would;
    /// otherwise `look` sees the link itself.
    fn looking_at<T>(
        &mut self,
        fd: &Resource<Descriptor>,
        path: &str,
        follow: bool,
        look: impl FnOnce(&mut Self, Resource<Descriptor>, String) -> FsResult<T>,
    ) -> FsResult<T> {
        let perms = self.dir(fd)?.0.perms;
        let Resolved { parent, last, .. } = self.resolve(fd, path)?;
        if let Some(meta) = last.and_then(|name| parent.symlink_metadata(name).ok()) {
            if follow && meta.file_type().is_symlink() {
                return Err(code(ErrorCode::NotPermitted));
            }
            if let Some(id) = last.filter(|_| meta.is_dir()).and_then(|name| platform::dir_identity(&parent, name))
                && self.guard.aliases_hidden(&parent, id)
            {
                return Err(code(ErrorCode::NoEntry));
            }
        }
        let dir = Dir::new(parent.into_std_file(), perms, OpenMode::READ, true);
        let temp = self.view.table.push(Descriptor::Dir(dir))?;
        let result = look(self, Resource::new_borrow(temp.rep()), last.unwrap_or(".").to_string());
        self.view.table.delete(temp)?;
        result
    }
}

/// What [`GuardedFs::open_beneath`] opened.
enum Opened {
    File(std::fs::File),
    Dir(std::fs::File, PathBuf),
}

/// A handle of its own on the folder behind `dir`, to walk from.
fn held(dir: &Dir) -> FsResult<cap_std::fs::Dir> {
    Ok(cap_std::fs::Dir::from_std_file(dir.dir.try_clone().map_err(io_code)?))
}

/// The error for an open of `name` in `parent` that failed: "not
/// permitted" when it met a link (as for any path that leaves its folder),
/// whatever error the OS gave for that.
fn not_followed(parent: &cap_std::fs::Dir, name: &str, e: std::io::Error) -> FsError {
    if parent.symlink_metadata(name).is_ok_and(|m| m.file_type().is_symlink()) {
        return code(ErrorCode::NotPermitted);
    }
    io_code(e)
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
        // Every open is the guard's: the guest gets read-only preopens only, so
        // any flag beyond reading is refused here, never handed to
        // wasmtime-wasi (which opens MUTATE_DIRECTORY or EXCLUSIVE alone read-only,
        // unguarded, following links and blocking on a FIFO).
        let (dir, _) = self.dir(&fd)?;
        if !fs::OpenFlags::DIRECTORY.contains(oflags)
            || !fs::DescriptorFlags::READ.contains(flags)
            || dir.perms != FsPerms::ReadOnly
        {
            return Err(code(ErrorCode::NotPermitted));
        }
        if path.len() > MAX_PATH_BYTES {
            return Err(code(ErrorCode::NameTooLong));
        }
        if self.guard.opened.len() >= MAX_OPEN {
            // Each open holds a host file descriptor: one call must not take them all.
            return Err(code(ErrorCode::Quota));
        }
        // Links are never followed, whatever the guest asks.
        let _ = path_flags;
        let directory = oflags.contains(fs::OpenFlags::DIRECTORY);
        let perms = dir.perms;
        let descriptor = match self.open_beneath(&fd, &path, directory)? {
            Opened::Dir(file, real) => {
                let pushed = self.view.table.push(Descriptor::Dir(Dir::new(file, perms, OpenMode::READ, true)))?;
                self.guard.places.insert(pushed.rep(), real);
                self.guard.opened.insert(pushed.rep());
                return Ok(pushed);
            }
            Opened::File(file) => Descriptor::File(File::new(file, perms, OpenMode::READ, true)),
        };
        let pushed = self.view.table.push(descriptor)?;
        self.guard.opened.insert(pushed.rep());
        Ok(pushed)
    }

    fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::DescriptorStat> {
        let follow = path_flags.contains(fs::PathFlags::SYMLINK_FOLLOW);
        self.looking_at(&fd, &path, follow, |s, temp, name| {
            fs::HostDescriptor::stat_at(&mut s.view, temp, fs::PathFlags::empty(), name)
        })
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: fs::PathFlags,
        path: String,
    ) -> FsResult<fs::MetadataHashValue> {
        let follow = path_flags.contains(fs::PathFlags::SYMLINK_FOLLOW);
        self.looking_at(&fd, &path, follow, |s, temp, name| {
            fs::HostDescriptor::metadata_hash_at(&mut s.view, temp, fs::PathFlags::empty(), name)
        })
    }

    fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        // Where the link itself is decides; its target is only text.
        self.looking_at(&fd, &path, false, |s, temp, name| fs::HostDescriptor::readlink_at(&mut s.view, temp, name))
    }

    fn read_directory(&mut self, fd: Resource<Descriptor>) -> FsResult<Resource<fs::DirectoryEntryStream>> {
        let (_, real) = self.dir(&fd)?;
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
        self.guard.places.remove(&fd.rep());
        self.guard.opened.remove(&fd.rep());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_resolved_by_name_and_never_climb_out() {
        let ok = |path| names(path).unwrap_or_else(|_| panic!("{path} refused"));
        assert_eq!(ok("a/b"), ["a", "b"]);
        assert_eq!(ok("./a//b/."), ["a", "b"]);
        assert_eq!(ok("a/../b"), ["b"]);
        assert_eq!(ok(""), Vec::<&str>::new());
        assert_eq!(ok("a/.."), Vec::<&str>::new());
        for path in ["..", "a/../..", "/etc/passwd", "a/../../a"] {
            assert!(names(path).is_err(), "{path} must be refused");
        }
    }

    #[test]
    fn data_dirs_are_hidden_in_any_case_and_outside_roots_fail_closed() {
        let root = tempfile::tempdir().unwrap();
        let config = root.path().join("home/.config/ragbox");
        std::fs::create_dir_all(&config).unwrap();
        let guard = FsGuard::new(&[root.path().to_path_buf()], [config.clone()]);
        let real = root.path().canonicalize().unwrap();
        assert!(!guard.is_hidden(&real.join("notes/a.md")));
        for hidden in [".ragbox", "sub/.RAGBOX/store.redb", "a/.Ragbox", "home/.config/ragbox/owner.key"] {
            assert!(guard.is_hidden(&real.join(hidden)), "{hidden}");
        }
        assert!(guard.is_hidden(Path::new("/elsewhere")), "outside every root");
    }
}
