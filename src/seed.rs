//! Seeds: independent random streams derived from one seed, so that changing one part of a run
//! (the batch, the members' starts, a defence's noise) keeps the others. At the bottom of the
//! crate: every floor draws from it and it calls none.

/// Independent streams derived from one seed, so that changing one part keeps the others.
pub fn seed_for(seed: u64, stream: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(stream.wrapping_mul(0xBF58_476D_1CE4_E5B9))
}
