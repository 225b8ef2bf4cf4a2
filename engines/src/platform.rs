//! What differs between operating systems, behind one small interface: how a
//! file is opened without following a link or blocking on a FIFO, how it is
//! made private to its owner, and what identifies a file on its filesystem.
//! The rest of the host does not `cfg` on the OS for these.

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt as _};
use cap_std::fs::{DirBuilder, Metadata, OpenOptions};

/// The user's config dir: `$RAGBOX_CONFIG_DIR`, else the platform's. Below
/// the config and the data dir alike (the user's key lives there).
pub fn user_config_dir() -> Option<std::path::PathBuf> {
    match std::env::var_os("RAGBOX_CONFIG_DIR") {
        Some(dir) if !dir.is_empty() => Some(std::path::PathBuf::from(dir)),
        _ => directories::ProjectDirs::from("", "", "ragbox").map(|d| d.config_dir().to_path_buf()),
    }
}

/// A folder of the user's cache (`~/.cache/ragbox/<sub>` or the platform's),
/// or `$<env>` when set; `None` when `$<env>` is `off` or no home is known.
pub fn user_cache_dir(env: &str, sub: &str) -> Option<std::path::PathBuf> {
    match std::env::var_os(env) {
        Some(v) if v == "off" => None,
        Some(v) if !v.is_empty() => Some(std::path::PathBuf::from(v)),
        _ => directories::ProjectDirs::from("", "", "ragbox").map(|d| d.cache_dir().join(sub)),
    }
}

/// `path` made absolute with every link resolved, as users write paths:
/// on Windows without the `\\?\` prefix std adds (which configs, logs and
/// other programs stumble on), where the path can do without it.
pub fn canonical(path: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    dunce::canonicalize(path)
}

/// Sets `options` to open exactly the entry named (a link is refused, not
/// followed) without waiting on it: a FIFO opened for reading would block
/// until a writer came.
pub fn no_follow_no_block(options: &mut OpenOptions) -> &mut OpenOptions {
    options.follow(FollowSymlinks::No);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    options
}

/// Sets std `options` to open without waiting on what it opens (a FIFO);
/// for paths the user gave, whose links are theirs.
pub fn no_block(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    options
}

/// Makes files created through std `options` readable by their owner only
/// (on Windows, a file under the user's profile inherits its owner-only ACL).
pub fn private_std_file(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options
}

/// The mode of a file that users other than its owner may read (as
/// `meta`, from std, describes it), for a message; `None` when only its
/// owner may, or where modes do not say (Windows: see [`open_to_others`]).
pub fn mode_open_to_others(meta: &std::fs::Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// Lowers the calling thread's priority, so background builds yield the CPU
/// to searches. Linux only: elsewhere `setpriority` would lower the whole
/// process, and Windows would need its own call; there it does nothing.
pub fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority only reads its plain integer arguments; `who` 0 is the calling thread on Linux.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}

/// Makes files created through `options` readable by their owner only.
pub fn private_file(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options
}

/// A builder of folders only their owner can enter.
pub fn private_dir() -> DirBuilder {
    #[allow(unused_mut)]
    let mut builder = DirBuilder::new();
    #[cfg(unix)]
    {
        use cap_std::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder
}

/// Whether users other than the owner may read or enter what `meta` describes.
pub fn open_to_others(meta: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use cap_std::fs::PermissionsExt as _;
        meta.permissions().mode() & 0o077 != 0
    }
    // Windows: a folder under the user's profile inherits its owner-only ACL.
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

/// Makes the folder held as `dir` private to its owner, through the handle
/// (its name may have been swapped for a link meanwhile).
pub fn make_dir_private(dir: &cap_std::fs::Dir) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let mode = rustix::fs::Mode::from_raw_mode(0o700);
        match rustix::fs::fchmod(dir, mode) {
            // Linux holds folders as O_PATH handles, which fchmod refuses;
            // the handle's /proc entry is the same folder, whatever its name now.
            #[cfg(target_os = "linux")]
            Err(rustix::io::Errno::BADF) => {
                use std::os::fd::{AsFd as _, AsRawFd as _};
                let fd = dir.as_fd().as_raw_fd();
                rustix::fs::chmod(format!("/proc/self/fd/{fd}"), mode)?;
            }
            other => other?,
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// The permissions that make a file (or, `dir`, a folder) private to its owner.
pub fn private_permissions(meta: &Metadata, dir: bool) -> cap_std::fs::Permissions {
    #[allow(unused_mut)]
    let mut permissions = meta.permissions();
    #[cfg(unix)]
    {
        use cap_std::fs::PermissionsExt as _;
        permissions.set_mode(if dir { 0o700 } else { 0o600 });
    }
    #[cfg(not(unix))]
    let _ = dir;
    permissions
}

/// Whether `name`, one name of a guest's path, names one entry and nothing
/// more: on Windows, `\\` separates names too and `:` names a drive or a
/// stream, so a name holding either is refused.
pub fn is_plain_name(name: &str) -> bool {
    if cfg!(windows) { !name.contains(['\\', ':']) } else { true }
}

/// What identifies a file on its filesystem: its inode (or Windows file
/// index) and, where the filesystem keeps it, its birth time. It stays
/// through a rename and changes when the file is replaced, as a `git pull`
/// or a copy replaces it; the birth time tells a new file from an old one
/// that left its inode number free for it. The device is left out: some
/// filesystems (btrfs subvolumes) number it anew at every mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileId {
    number: u64,
    born_nanos: u64,
}

impl FileId {
    /// No file.
    pub const NONE: FileId = FileId { number: 0, born_nanos: 0 };

    /// An identity from its parts (for tests and other platforms' callers).
    pub const fn new(number: u64, born_nanos: u64) -> Self {
        FileId { number, born_nanos }
    }

    /// The identity as bytes, for a MAC.
    pub fn to_bytes(self) -> [u8; 16] {
        let mut out = [0; 16];
        out[..8].copy_from_slice(&self.number.to_le_bytes());
        out[8..].copy_from_slice(&self.born_nanos.to_le_bytes());
        out
    }
}

/// The identity of the folder `name` in `parent`, if it is one (read
/// through a handle: Windows gives a path's metadata without its file index).
pub fn dir_identity(parent: &cap_std::fs::Dir, name: &str) -> Option<FileId> {
    use cap_fs_ext::DirExt as _;
    if !parent.symlink_metadata(name).ok()?.is_dir() {
        return None;
    }
    let dir = parent.open_dir_nofollow(name).ok()?;
    Some(file_id(&dir.dir_metadata().ok()?))
}

/// Whether `real` (absolute, no link on it) lies in a process's folder in
/// `/proc`: its environment and memory, never for a tool or a client.
pub fn in_process_folder(real: &std::path::Path) -> bool {
    let mut parts = real.components().skip(1).map(|c| c.as_os_str().to_str().unwrap_or(""));
    parts.next() == Some("proc")
        && parts.next().is_some_and(|p| {
            p == "self" || p == "thread-self" || (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// The identity of the file `meta` describes. `meta` must come through an
/// open handle (`File::metadata`, `Dir::dir_metadata`): Windows gives a
/// path's metadata without its file index, which is then 0 (no identity).
pub fn file_id(meta: &Metadata) -> FileId {
    #[cfg(unix)]
    let number = {
        use cap_std::fs::MetadataExt as _;
        meta.ino()
    };
    // Windows' file index, when the metadata came from an open handle (as
    // cap-std's does); 0, no identity, when not.
    #[cfg(windows)]
    let number = cap_primitives::fs::_WindowsByHandle::file_index(meta).unwrap_or(0);
    // Windows: NTFS's file index carries a sequence number that changes when
    // its record is reused, so it tells new from old alone; and a creation
    // time may be taken from a time that moves (wine reports the inode's
    // change time), which would disown every index.
    #[cfg(windows)]
    let born_nanos = 0;
    #[cfg(not(windows))]
    let born_nanos = meta
        .created()
        .ok()
        .and_then(|t| t.into_std().duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    FileId { number, born_nanos }
}

/// Whether the file `meta` describes belongs to the user this process runs
/// as (always, where ownership is not a file's uid: Windows, whose files in
/// the user's profile inherit its owner-only ACL).
pub fn owned_by_this_user(meta: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use cap_std::fs::MetadataExt as _;
        // SAFETY: geteuid has no preconditions.
        meta.uid() == unsafe { libc::geteuid() }
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        true
    }
}

/// The bytes the file `meta` describes takes on disk: its blocks where the
/// OS counts them (a sparse file's holes take none), else its length.
pub fn disk_bytes(meta: &Metadata) -> u64 {
    #[cfg(unix)]
    {
        use cap_std::fs::MetadataExt as _;
        meta.blocks().saturating_mul(512)
    }
    #[cfg(not(unix))]
    {
        meta.len()
    }
}

/// How many names the file has (hard links); 1 where that cannot be told.
pub fn links(meta: &Metadata) -> u64 {
    #[cfg(unix)]
    {
        use cap_std::fs::MetadataExt as _;
        meta.nlink()
    }
    #[cfg(windows)]
    {
        cap_primitives::fs::_WindowsByHandle::number_of_links(meta).map_or(1, u64::from)
    }
}

/// What kind of entry `kind` is, in words, when it is neither a regular
/// file nor a folder (`None` for those).
pub fn special_kind(kind: &cap_std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() || kind.is_dir() {
        return None;
    }
    if kind.is_symlink() {
        return Some("a symbolic link");
    }
    #[cfg(unix)]
    {
        use cap_std::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return Some("a FIFO");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
        if kind.is_block_device() || kind.is_char_device() {
            return Some("a device");
        }
    }
    Some("a special file")
}

/// Writes `file` whole through `write`: into a temporary file of its own in
/// the same folder (made if missing), flushed to disk, then renamed over
/// `file`. Readers see the old file or the new one, never half of one; two
/// threads or processes writing it at once do not interleave; a failure
/// leaves no temporary file behind.
pub fn write_whole(
    file: &std::path::Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = file.parent().ok_or_else(|| std::io::Error::other("no parent folder"))?;
    std::fs::create_dir_all(dir)?;
    let mut tmp = temp_file_in(dir, None)?;
    write(tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    tmp.persist(file).map(drop).map_err(|e| e.error)
}

/// A temporary file in `dir`, created with the permissions `like` has or,
/// without them, those any new file gets (0o666 less the umask) rather than
/// tempfile's owner-only 0o600: it is renamed over a file others may read.
pub fn temp_file_in(
    dir: &std::path::Path,
    like: Option<&std::fs::Permissions>,
) -> std::io::Result<tempfile::NamedTempFile> {
    #[allow(unused_mut)]
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(std::fs::Permissions::from_mode(like.map_or(0o666, |p| p.mode() & 0o777)));
    }
    // Windows: a new file inherits its folder's ACL, as any other would.
    #[cfg(not(unix))]
    let _ = like;
    builder.tempfile_in(dir)
}

/// Makes `dir` (and its parents, as usual) a folder only this user may
/// enter, or says why it is not one: a link, another user's folder, or one
/// others may open. The per-user service's socket lives in it.
#[cfg(unix)]
pub fn private_folder(dir: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
    let shown = dir.display();
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot make {}: {e}", parent.display()))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot make {shown}: {e}")),
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.file_type().is_dir() {
        return Err(format!("{shown} is not a folder (a link is not followed)"));
    }
    // SAFETY: geteuid has no preconditions.
    if meta.uid() != unsafe { libc::geteuid() } {
        return Err(format!("{shown} belongs to another user"));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!("others may open {shown} (mode {:o}): chmod 700 it", meta.mode() & 0o777));
    }
    Ok(())
}

/// Whether the process at the other end of the Unix socket `socket` runs as
/// this user (false where the OS cannot say).
#[cfg(unix)]
pub fn peer_is_this_user(socket: &impl std::os::fd::AsRawFd) -> bool {
    // SAFETY: geteuid has no preconditions.
    peer_uid(socket.as_raw_fd()) == Some(unsafe { libc::geteuid() })
}

/// The user id the process at the other end of the Unix socket `fd` runs as.
#[cfg(unix)]
#[allow(unreachable_code)] // one of the OS blocks returns
fn peer_uid(fd: std::os::fd::RawFd) -> Option<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let mut cred = libc::ucred { pid: 0, uid: u32::MAX, gid: u32::MAX };
        let mut len = size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: `cred` and `len` are valid for writes of the sizes given.
        let rc =
            unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_PEERCRED, (&raw mut cred).cast(), &raw mut len) };
        return (rc == 0).then_some(cred.uid);
    }
    #[cfg(any(
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "netbsd",
        target_os = "dragonfly"
    ))]
    {
        let (mut uid, mut gid) = (u32::MAX, u32::MAX);
        // SAFETY: `uid` and `gid` are valid for writes.
        let rc = unsafe { libc::getpeereid(fd, &raw mut uid, &raw mut gid) };
        return (rc == 0).then_some(uid);
    }
    let _ = fd;
    None
}

/// What sets this process apart from the user's others, as text for the
/// per-user service's key: the machine's name (a home folder shared over NFS
/// is seen from several) and, on Linux, its namespaces and whether it runs
/// with no-new-privileges or a seccomp filter (as sandboxes such as
/// bubblewrap, landlock rules and containers set them). A process confined
/// otherwise is never served by a service that is not.
#[cfg(unix)]
pub fn confinement() -> String {
    let mut out = String::new();
    let mut name = [0u8; 256];
    // SAFETY: `name` is valid for writes of its length.
    if unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) } == 0 {
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        out.push_str(&String::from_utf8_lossy(&name[..end]));
        out.push('\n');
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        for ns in ["mnt", "pid", "user", "net", "ipc", "uts", "cgroup"] {
            if let Ok(link) = std::fs::read_link(format!("/proc/self/ns/{ns}")) {
                out.push_str(&link.to_string_lossy());
                out.push('\n');
            }
        }
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        for line in status.lines().filter(|l| l.starts_with("NoNewPrivs:") || l.starts_with("Seccomp:")) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Eight random bytes, for names of temporary files (from the OS; a
/// hash of the process id if it has none to give).
pub fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        use std::hash::BuildHasher as _;
        return std::collections::hash_map::RandomState::new().hash_one(std::process::id());
    }
    u64::from_le_bytes(bytes)
}

/// Flushes `dir`'s entries (files made, renamed or removed in it) to disk.
/// Windows needs nothing: a file's entry is durable with the file.
pub fn sync_dir(dir: &cap_std::fs::Dir) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use rustix::fs::{Mode, OFlags};
        // A held folder may be open for paths only (Linux's O_PATH), which cannot be synced.
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let opened = rustix::fs::openat(dir, ".", flags, Mode::empty())?;
        rustix::fs::fsync(&opened)?;
        Ok(())
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Raises this process's soft limit on open files to its hard limit (on
/// macOS, to at most `OPEN_MAX`, which is all it grants): the per-user
/// service holds a socket, a file watch and a store for each session, and
/// 1,000 idle sessions reached Linux's default soft limit of 1,024. Returns
/// the limit in force.
#[cfg(unix)]
pub fn raise_open_file_limit() -> std::io::Result<libc::rlim_t> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is valid for writes.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // macOS's `OPEN_MAX` (<sys/syslimits.h>), which the libc crate does not carry.
    #[cfg(target_os = "macos")]
    let want = limit.rlim_max.min(10240);
    #[cfg(not(target_os = "macos"))]
    let want = limit.rlim_max;
    if want > limit.rlim_cur {
        let raised = libc::rlimit { rlim_cur: want, rlim_max: limit.rlim_max };
        // SAFETY: `raised` is a valid rlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        limit.rlim_cur = want;
    }
    Ok(limit.rlim_cur)
}

/// The machine's physical memory in bytes, where the OS says (Unix); `None` elsewhere.
pub fn physical_memory() -> Option<u64> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf reads a system value and touches no memory of ours.
        let (pages, size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        (pages > 0 && size > 0).then(|| pages as u64 * size as u64)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Makes `file` this process's stderr (what panics and every log line write to).
#[cfg(unix)]
pub fn redirect_stderr(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: both descriptors are open; dup2 replaces fd 2 atomically.
    if unsafe { libc::dup2(file.as_raw_fd(), libc::STDERR_FILENO) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
