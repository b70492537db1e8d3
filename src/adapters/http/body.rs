//! Reading a server's reply: a success's body within a size limit, an error's first bytes.

use super::{status_failure, transport_failure, Endpoint, Failure};
use crate::vocab::call::ErrorKind;

impl Endpoint {
    /// [`Endpoint::post`] sent and its reply read (at most [`MAX_REPLY_BYTES`]): the body of a
    /// success, else the failure its status or the transport gives (the one path every JSON
    /// endpoint shares).
    pub async fn post_for_body(
        &self,
        client: &reqwest::Client,
        path: &str,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, Failure> {
        let response = self
            .post(client, path, body)
            .send()
            .await
            .map_err(|e| transport_failure(&e, self))?;
        self.reply_body(response, path, MAX_REPLY_BYTES).await
    }

    /// The body of `response` when its status is a success (at most `limit` bytes, see
    /// [`Endpoint::read_body_within`]), else the failure its status gives.
    pub async fn reply_body(
        &self,
        response: reqwest::Response,
        path: &str,
        limit: usize,
    ) -> Result<Vec<u8>, Failure> {
        if !response.status().is_success() {
            return Err(self.error_reply(response).await);
        }
        self.read_body_within(response, path, limit).await
    }

    /// The body of a success reply, read chunk by chunk up to [`MAX_REPLY_BYTES`]: a larger
    /// one (announced or sent) is refused, naming the URL, before more of it is held.
    pub async fn read_body(
        &self,
        response: reqwest::Response,
        path: &str,
    ) -> Result<Vec<u8>, Failure> {
        self.read_body_within(response, path, MAX_REPLY_BYTES).await
    }

    /// [`Endpoint::read_body`] up to `limit` bytes (a whole number of MiB) instead.
    pub async fn read_body_within(
        &self,
        response: reqwest::Response,
        path: &str,
        limit: usize,
    ) -> Result<Vec<u8>, Failure> {
        let mut body = Vec::new();
        self.stream_body(response, path, limit, |chunk| {
            body.extend_from_slice(chunk);
            Ok(())
        })
        .await?;
        Ok(body)
    }

    /// A success reply's body written into `file` as it comes, chunk by chunk (a download of
    /// any size holds one chunk in memory), up to `limit` bytes; the bytes written. `file` is
    /// truncated first, so a retried download starts over.
    pub async fn reply_to_file(
        &self,
        response: reqwest::Response,
        path: &str,
        limit: usize,
        file: &mut std::fs::File,
    ) -> Result<u64, Failure> {
        use std::io::{Seek, Write};
        if !response.status().is_success() {
            return Err(self.error_reply(response).await);
        }
        let local = |err: std::io::Error| {
            Failure::fatal(
                ErrorKind::Client,
                format!(
                    "cannot write the reply from {}: {err}",
                    self.shown_url(path)
                ),
            )
        };
        file.set_len(0).map_err(local)?;
        file.rewind().map_err(local)?;
        let mut written = 0u64;
        self.stream_body(response, path, limit, |chunk| {
            written += chunk.len() as u64;
            file.write_all(chunk).map_err(local)
        })
        .await?;
        file.flush().map_err(local)?;
        Ok(written)
    }

    /// Each chunk of a reply's body handed to `take` as it arrives, refusing a body larger
    /// than `limit` (announced or sent) before more of it is taken, naming the URL.
    async fn stream_body(
        &self,
        mut response: reqwest::Response,
        path: &str,
        limit: usize,
        mut take: impl FnMut(&[u8]) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        let too_large = || {
            Failure::fatal(
                ErrorKind::Malformed,
                format!(
                    "the reply from {} is larger than the limit of {} MiB",
                    self.shown_url(path),
                    limit >> 20
                ),
            )
        };
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(too_large());
        }
        let mut taken = 0usize;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| transport_failure(&e, self))?
        {
            if taken + chunk.len() > limit {
                return Err(too_large());
            }
            taken += chunk.len();
            take(&chunk)?;
        }
        Ok(())
    }

    /// The failure of a reply whose status is not a success. Only the first
    /// [`MAX_ERROR_BODY_BYTES`] of its body are read: the message shows a short part of it.
    pub async fn error_reply(&self, mut response: reqwest::Response) -> Failure {
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            let room = MAX_ERROR_BODY_BYTES - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() == MAX_ERROR_BODY_BYTES {
                break;
            }
        }
        status_failure(status, &headers, &body, self)
    }
}

/// The largest reply body read from any server (chat, embedder, retriever, reranker, judge),
/// a stream's included: 32 MiB. An embeddings reply of `batch_size` vectors is the largest a
/// sweep expects (64 vectors of 3072 numbers are about 4 MiB). Replies are read a few at a
/// time (8 searches, `concurrency` calls), so this bounds the memory they hold.
pub const MAX_REPLY_BYTES: usize = 32 * 1024 * 1024;

/// The most of an error reply's body read: 64 KiB (its message is shown cut to 200
/// characters).
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
