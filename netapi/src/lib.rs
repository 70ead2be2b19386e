//! Salt's REST API (`rest_cherrypy`, and `rest_tornado` in [`tornado`]) served by the saltq
//! master: the same URLs, request bodies and answers as Salt 3007.8's salt-api, so pepper and
//! salt-api scripts work unchanged; their websockets on the event bus are in [`ws`].
//!
//! This crate holds what salt-api decides: its config ([`config`]), who is who (the `file`,
//! `pam`, `rest` and `auto` eauth backends and `external_auth` permissions, [`eauth`]; PAM through
//! libpam loaded at run time, [`pam`], the one module with `unsafe` code; tokens that survive a restart,
//! [`tokens`]; failed-login limits, [`limit`]), how request bodies become lowstate chunks
//! ([`low`]) and the HTTP routes ([`server`]). It never touches the job system: every chunk is
//! handed with the caller's [`Identity`] to a [`Backend`], which the master implements by
//! calling its own gRPC service code, so publisher ACLs and job loads see the eauth user the
//! same way whichever door a request came through.

pub mod backend;
pub mod config;
pub mod eauth;
pub mod limit;
pub mod low;
pub mod pam;
pub mod rest;
pub mod server;
pub mod tokens;
pub mod tornado;
pub mod ws;

pub use backend::{ApiError, Backend, Event, Identity};
pub use config::{Config, RawConfig};
pub use server::serve;
