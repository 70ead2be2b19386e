//! saltq's wire contract: the `saltq.v1` services, generated from `saltq/v1/*.proto`.

/// The `saltq.v1` package.
pub mod v1 {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    tonic::include_proto!("saltq.v1");
}

/// The `saltq.cluster.v1` package: what the replicas of a master cluster tell each other.
pub mod cluster {
    /// Version 1.
    pub mod v1 {
        #![allow(missing_docs, clippy::all, clippy::pedantic)]
        tonic::include_proto!("saltq.cluster.v1");
    }
}

/// Encoded file descriptor set of `saltq.v1` and its imports, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/saltq_descriptor.bin"));
