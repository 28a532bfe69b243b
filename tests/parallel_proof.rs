//! The proofs on every core: the second layer's certificate and its search over candidates,
//! peeling and the first layer's search run on rayon's threads (`leakscope::parallel`) and give
//! what one thread gives, bit for bit.
#![cfg(feature = "rayon")]
mod common;

use common::{dataset, tableak};
use leakscope::{AttackConfig, MemberRange, Members, Runtime, assess_members, invert_members};

/// The report of `members` assessed (pooled, proved, peeled) on `threads` threads, without what
/// differs by design: its seconds and the backend's thread count.
fn assessed(
    threads: usize,
    data: &leakscope::table::Dataset,
    config: &AttackConfig,
    members: &Members,
) -> serde_json::Value {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let report = pool
        .install(|| {
            pollster::block_on(assess_members(
                &Runtime::cpu(),
                data,
                config,
                vec![members.clone()],
                None,
                0.0,
            ))
        })
        .unwrap();
    let mut json = serde_json::to_value(&report).unwrap();
    let object = json.as_object_mut().unwrap();
    object.remove("seconds");
    object.remove("backend");
    json
}

/// Adult batches where each proof has work to do: at B = 64 (seed 2) the certificate proves all
/// but a row and peeling finds it; at B = 24 the first layer's search runs beside it. Members
/// stopped at 300 steps leave the certificate's search many candidates to refine.
#[test]
fn the_proofs_give_on_three_threads_what_they_give_on_one() {
    let data = dataset("adult-sample.csv", "salary");
    for (batch_size, seed) in [(64, 2), (24, 1)] {
        let config = AttackConfig {
            attack: tableak(8),
            batch_size,
            seed,
            iterations: 300,
            ..Default::default()
        };
        let all = MemberRange { first: 0, count: 8 };
        let members = pollster::block_on(invert_members(&Runtime::cpu(), &data, &config, all, &mut |_| true)).unwrap();
        let one = assessed(1, &data, &config, &members);
        let three = assessed(3, &data, &config, &members);
        let proved = one["provenance"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["provenance"] == "proved")
            .map_or(0, |g| g["rows"].as_u64().unwrap());
        eprintln!("  B = {batch_size}: {proved} rows proved");
        assert!(proved > 0, "B = {batch_size}: the proofs proved nothing to compare");
        assert_eq!(one, three, "B = {batch_size}, seed {seed}");
    }
}
