//! pgvector over TLS with rustls: a TLS-terminating proxy started inside the test (a
//! certificate signed by a throwaway CA, made with `openssl`) in front of the test PostgreSQL,
//! so `sslmode` and `sslrootcert` are checked against a real handshake without reconfiguring
//! the shared server.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{require_database, require_tool, run_ok, Project};

/// Make a CA and a server certificate for `localhost` (not for 127.0.0.1) in `dir`.
fn certificates(dir: &Path) {
    let run = |args: &[&str]| {
        run_ok(
            std::process::Command::new("openssl")
                .args(args)
                .current_dir(dir),
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    run(&[
        &["req", "-x509"][..],
        &ec,
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=rageval test CA",
        ],
    ]
    .concat());
    run(&[
        &["req"][..],
        &ec,
        &[
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    ]
    .concat());
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
}

/// A proxy that answers PostgreSQL's SSLRequest with `S`, terminates TLS and forwards the
/// session in plain text to `backend`; it refuses clients that do not ask for TLS.
struct TlsProxy {
    port: u16,
    handshakes: Arc<AtomicU64>,
    _runtime: tokio::runtime::Runtime,
}

impl TlsProxy {
    fn start(dir: &Path, backend: String) -> Self {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(dir.join("server.pem"))
                .unwrap()
                .map(Result::unwrap)
                .collect();
        let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let runtime = crate::support::server_runtime();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let handshakes = Arc::new(AtomicU64::new(0));
        let counted = handshakes.clone();
        runtime.spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, backend, counted) =
                    (acceptor.clone(), backend.clone(), counted.clone());
                tokio::spawn(async move {
                    // SSLRequest: length 8, code 80877103.
                    let mut request = [0u8; 8];
                    if client.read_exact(&mut request).await.is_err()
                        || request != [0, 0, 0, 8, 4, 210, 22, 47]
                    {
                        return;
                    }
                    if client.write_all(b"S").await.is_err() {
                        return;
                    }
                    let Ok(mut tls) = acceptor.accept(client).await else {
                        return;
                    };
                    counted.fetch_add(1, Ordering::Relaxed);
                    let Ok(mut server) = tokio::net::TcpStream::connect(&backend).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut server).await;
                });
            }
        });
        TlsProxy {
            port,
            handshakes,
            _runtime: runtime,
        }
    }
}

#[test]
fn pgvector_connects_over_tls_as_sslmode_and_sslrootcert_ask() {
    let Some(dsn) = require_database() else {
        return;
    };
    if !require_tool("openssl", "the `openssl` package (apt-get install openssl)") {
        return;
    }
    let p = Project::sample();
    certificates(p.path());
    // postgresql://user@host:port/db
    let (user, rest) = dsn
        .trim_start_matches("postgresql://")
        .split_once('@')
        .unwrap();
    let (backend, db) = rest.split_once('/').unwrap();
    let proxy = TlsProxy::start(p.path(), backend.to_string());
    let ca = p.path().join("ca.pem");
    let via =
        |host: &str, query: &str| format!("postgresql://{user}@{host}:{}/{db}?{query}", proxy.port);
    p.write(
        "pg.yaml",
        "evalsets: [evalsets/club.yaml]\nretriever:\n  kind: pgvector\n  dsn_env: RAGEVAL_TEST_DSN\n  table: rv_tls\n",
    );
    // verify-full: the chain leads to the CA and the certificate names the host.
    let full = via(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
    );
    p.rageval(["--config", "pg.yaml", "index", "--replace"])
        .env("RAGEVAL_TEST_DSN", &full)
        .stdout(format!("loaded 23 chunks into `rv_tls` at postgresql://{user}@localhost:{}/{db} (embedder `hash-1024`)\n", proxy.port))
        .run();
    let sweep = |dsn: &str, out_dir: &str| {
        p.rageval([
            "--config",
            "pg.yaml",
            "sweep",
            "--min-score",
            "0.3",
            "--k",
            "2",
            "--out",
            out_dir,
            "--quiet",
        ])
        .env("RAGEVAL_TEST_DSN", dsn)
    };
    // verify-ca checks the chain, not the name (127.0.0.1 is not on the certificate); require
    // encrypts without checking.
    for (i, query) in [
        format!("sslmode=verify-ca&sslrootcert={}", ca.display()),
        "sslmode=require".to_string(),
    ]
    .iter()
    .enumerate()
    {
        sweep(&via("127.0.0.1", query), &format!("ok{i}")).run();
    }
    let before = proxy.handshakes.load(Ordering::Relaxed);
    assert!(before >= 3, "every connection went through TLS ({before})");
    // verify-full refuses a certificate that does not name the host; verify-ca without the
    // test CA refuses the chain (the Mozilla roots do not hold it).
    let cases = [
        (
            via("127.0.0.1", &format!("sslmode=verify-full&sslrootcert={}", ca.display())),
            format!("error: cannot connect at postgresql://{user}@127.0.0.1:{}/{db}: error performing TLS handshake: invalid peer certificate: certificate not valid for name \"127.0.0.1\"; certificate is only valid for DnsName(\"localhost\")\n", proxy.port),
        ),
        (
            via("localhost", "sslmode=verify-ca"),
            format!("error: cannot connect at postgresql://{user}@localhost:{}/{db}: error performing TLS handshake: invalid peer certificate: UnknownIssuer\n", proxy.port),
        ),
        (
            via("localhost", "sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem"),
            format!("error: postgresql://{user}@localhost:{}/{db}: cannot read `sslrootcert` `/nonexistent/ca.pem`: I/O error: No such file or directory (os error 2)\n", proxy.port),
        ),
    ];
    for (i, (dsn, want)) in cases.iter().enumerate() {
        sweep(dsn, &format!("bad{i}"))
            .status(2)
            .stderr(want.as_str())
            .absent(&format!("bad{i}"))
            .run();
    }
}
