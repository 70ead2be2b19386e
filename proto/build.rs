//! Compiles the saltq.v1 protobuf files with protox, so no system `protoc` is needed.

use std::path::PathBuf;

const FILES: &[&str] = &[
    "saltq/v1/common.proto",
    "saltq/v1/minion.proto",
    "saltq/v1/job.proto",
    "saltq/v1/event.proto",
    "saltq/v1/runner.proto",
    "saltq/v1/key.proto",
    "saltq/v1/syndic.proto",
    "saltq/cluster/v1/cluster.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for f in FILES {
        println!("cargo:rerun-if-changed={f}");
    }
    let fds = protox::compile(FILES, ["."])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("saltq_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}
