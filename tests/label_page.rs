//! The labelling page in a real browser: headless Chromium driven over the DevTools protocol
//! on `--remote-debugging-pipe` (fd 3 in, fd 4 out, messages ending in NUL). It loads the page
//! `rageval label --serve` printed, presses keys, and reads the labels file after each: keys
//! grade and advance, undo takes a label back, and a reload resumes at the first unlabelled
//! reply. Skipped with a note when Chromium is absent; CI installs it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::browser::{have_chromium, CHROMIUM, HEADLESS};
use crate::http::MockLlm;
use crate::labels::{swept, Page};
use crate::support::{col, read_csv};

const TIMEOUT: Duration = Duration::from_secs(60);

extern "C" {
    fn dup2(old: i32, new: i32) -> i32;
    fn pipe2(fds: *mut i32, flags: i32) -> i32;
    fn fcntl(fd: i32, cmd: i32, arg: i32) -> i32;
}

/// `F_DUPFD`: a copy at the lowest free descriptor from `arg` on.
const F_DUPFD: i32 = 0;

/// Linux's `O_CLOEXEC`: the test's ends of the pipes stay out of the browser.
const O_CLOEXEC: i32 = 0o2000000;

/// A pipe: (read end, write end).
fn pipe() -> (File, File) {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes; each is owned once below.
    unsafe {
        assert_eq!(pipe2(fds.as_mut_ptr(), O_CLOEXEC), 0, "pipe2");
        (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
    }
}

/// A headless Chromium and one page of it, attached.
struct Browser {
    child: Child,
    to: File,
    from: File,
    next: u64,
    session: String,
    /// Stops the watchdog that kills a browser that hangs.
    _done: mpsc::Sender<()>,
}

impl Browser {
    fn open(url: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (their_in, to) = pipe();
        let (from, their_out) = pipe();
        let (fd_in, fd_out) = (their_in.as_raw_fd(), their_out.as_raw_fd());
        let mut cmd = Command::new(CHROMIUM);
        cmd.args(HEADLESS)
            .arg("--remote-debugging-pipe")
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: fcntl and dup2 are async-signal-safe; they give the child the pipe ends as
        // fds 3 and 4 (without close-on-exec), as --remote-debugging-pipe expects. The ends
        // are first copied above 9, so that one at 3 or 4 is not overwritten or left closing.
        unsafe {
            cmd.pre_exec(move || {
                let (a, b) = (fcntl(fd_in, F_DUPFD, 10), fcntl(fd_out, F_DUPFD, 10));
                if a < 0 || b < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start chromium");
        drop((their_in, their_out));
        std::mem::forget(profile);
        let (done, wait) = mpsc::channel::<()>();
        let pid = child.id();
        std::thread::spawn(move || {
            if wait.recv_timeout(TIMEOUT) == Err(mpsc::RecvTimeoutError::Timeout) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        });
        let mut b = Browser {
            child,
            to,
            from,
            next: 0,
            session: String::new(),
            _done: done,
        };
        let target = b.call("Target.createTarget", json!({ "url": url }), false);
        let target = target["targetId"].as_str().unwrap().to_string();
        let attached = b.call(
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
            false,
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        b
    }

    /// Send one command (to the page's session when `page`) and wait for its result.
    fn call(&mut self, method: &str, params: Value, page: bool) -> Value {
        self.next += 1;
        let mut msg = json!({ "id": self.next, "method": method, "params": params });
        if page {
            msg["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).expect("write to chromium");
        loop {
            let reply = self.message();
            if reply["id"] == json!(self.next) {
                assert!(reply.get("error").is_none(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// The next message from the browser (an answer or an event).
    fn message(&mut self) -> Value {
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            let n = self
                .from
                .read(&mut byte)
                .expect("chromium hung or closed the pipe (killed after the timeout)");
            assert!(n == 1, "chromium closed the pipe");
            if byte[0] == 0 {
                return serde_json::from_slice(&buf).unwrap();
            }
            buf.push(byte[0]);
        }
    }

    /// Evaluate `expression` in the page, by value.
    fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
            true,
        );
        r["result"]["value"].clone()
    }

    /// Wait until `expression` is true in the page.
    fn until(&mut self, expression: &str) {
        let start = Instant::now();
        while self.eval(expression) != json!(true) {
            assert!(start.elapsed() < TIMEOUT, "never true: {expression}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Press one key, and wait until the page has acted on it and shows reply `pos`.
    fn press(&mut self, key: &str, pos: usize) {
        for kind in ["keyDown", "keyUp"] {
            let mut params =
                json!({ "type": kind, "key": key, "code": format!("Key{}", key.to_uppercase()) });
            if kind == "keyDown" {
                params["text"] = json!(key);
            }
            self.call("Input.dispatchKeyEvent", params, true);
        }
        self.until(&format!(
            "!document.body.dataset.busy && document.body.dataset.pos === '{pos}'"
        ));
    }

    fn text(&mut self, id: &str) -> String {
        self.eval(&format!("document.getElementById('{id}').textContent"))
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The labels file's (refused, correct) per row.
fn labels(p: &crate::support::Project) -> Vec<(String, String)> {
    let (h, rows) = read_csv(&p.read("reports/latest/labels.csv"));
    rows.iter()
        .map(|r| {
            (
                col(&h, r, "refused").to_string(),
                col(&h, r, "correct").to_string(),
            )
        })
        .collect()
}

fn pair(refused: &str, correct: &str) -> (String, String) {
    (refused.to_string(), correct.to_string())
}

#[test]
fn keys_grade_and_advance_undo_takes_back_and_a_reload_resumes() {
    if !have_chromium() {
        return;
    }
    let server = MockLlm::start(&["--paraphrase"]);
    let p = swept(&server);
    let page = Page::start(&p, &[]);
    let mut b = Browser::open(&page.url);
    b.until("document.body.dataset.ready === '1'");
    assert_eq!(b.text("progress"), "0 of 7 labelled");
    let (h, rows) = read_csv(&p.read("reports/latest/labels.csv"));
    assert_eq!(b.text("reply"), col(&h, &rows[0], "reply"));
    assert_eq!(b.text("question"), col(&h, &rows[0], "question"));
    b.press("r", 1);
    b.press("c", 2);
    b.press("w", 3);
    let empty = pair("", "");
    assert_eq!(
        labels(&p)[..4],
        [
            pair("yes", ""),
            pair("no", "yes"),
            pair("no", "no"),
            empty.clone()
        ]
    );
    assert_eq!(b.text("progress"), "3 of 7 labelled");
    b.press("u", 2);
    assert_eq!(labels(&p)[2], empty, "undo writes the label back");
    assert_eq!(b.text("progress"), "2 of 7 labelled");
    b.press("s", 3);
    b.press("a", 4);
    assert_eq!(
        labels(&p)[..5],
        [
            pair("yes", ""),
            pair("no", "yes"),
            empty.clone(),
            pair("no", ""),
            empty.clone()
        ]
    );
    // A reload resumes at the first unlabelled reply: the skipped one.
    b.call("Page.reload", json!({}), true);
    b.until("document.body.dataset.ready === '1'");
    assert_eq!(b.eval("document.body.dataset.pos"), json!("2"));
    assert_eq!(b.text("progress"), "3 of 7 labelled");
    assert_eq!(b.text("reply"), col(&h, &rows[2], "reply"));
    // The page's text is text: a reply's markup would be escaped, never an element.
    assert_eq!(
        b.eval("document.querySelectorAll('#card script, #card img').length"),
        json!(0)
    );
}
