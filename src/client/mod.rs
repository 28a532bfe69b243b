//! Client: the network, its explicit gradient and the federated protocols that send it.
pub mod accountant;
pub mod activation;
pub mod canary;
pub mod defence;
pub mod exact;
pub mod fedavg;
pub mod gradient;
pub mod head;
pub mod network;
pub mod optimizer;
pub mod privacy;
pub mod simulate;
pub mod training;
pub mod update;
pub mod vertical;

pub use gradient::{ParamGrads, param_grads};
pub use network::{Net, Params};
pub use update::{Role, Update};
