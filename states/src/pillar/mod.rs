//! Pillar as Salt compiles it (issue #33): the top file, the SLS files through the same
//! renderer pipeline as states, `include:`, merging, and the external pillar sources in
//! [`ext`]. Shared by the master (per minion) and the masterless minion (`file_client: local`).

pub mod ext;
