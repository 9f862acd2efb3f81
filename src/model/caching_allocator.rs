//! PyTorch's CUDA caching allocator, block by block: what `max_memory_reserved` becomes when a sequence of
//! allocations and frees runs through it.
//!
//! The rules are those of `c10/cuda/CUDACachingAllocator.cpp` with its default settings (one stream, no
//! `expandable_segments`, no `max_split_size_mb`, no garbage-collection threshold):
//! - `round_size`: a request is rounded up to a multiple of 512 B (`kMinBlockSize`), at least 512 B.
//! - Two pools: requests of at most 1 MiB (`kSmallSize`) are served from the small pool, larger ones from the
//!   large pool.
//! - `get_free_block`: the smallest cached free block of the pool that is at least the request (best fit;
//!   lowest address on ties).
//! - `alloc_block` when nothing fits (`get_allocation_size`): a new segment of 2 MiB (`kSmallBuffer`) for a
//!   small request, 20 MiB (`kLargeBuffer`) for a request under 10 MiB (`kMinLargeAlloc`), else the request
//!   rounded up to a multiple of 2 MiB (`kRoundLarge`).
//! - `should_split`: the block is split when the remainder is at least 512 B (small pool) or more than
//!   1 MiB (large pool); otherwise the whole block is handed out.
//! - `free_block`: a freed block merges with free neighbours of the same segment; segments are never
//!   merged with each other and never returned to the driver (no `empty_cache`).
//!
//! Reserved memory is the sum of segment sizes; allocated is the sum of handed-out blocks (with their
//! rounding and unsplit remainders), as `torch.cuda.memory_allocated` counts them.

use std::collections::BTreeMap;

/// `kMinBlockSize`: every request is rounded up to a multiple of this.
pub const MIN_BLOCK: u64 = 512;
/// `kSmallSize`: the largest request served from the small pool.
pub const SMALL_SIZE: u64 = 1 << 20;
/// `kSmallBuffer`: the segment size of the small pool.
pub const SMALL_BUFFER: u64 = 2 << 20;
/// `kLargeBuffer`: the segment size for large requests under [`MIN_LARGE_ALLOC`].
pub const LARGE_BUFFER: u64 = 20 << 20;
/// `kMinLargeAlloc`: from this size on, a large request gets a segment of its own size.
pub const MIN_LARGE_ALLOC: u64 = 10 << 20;
/// `kRoundLarge`: a segment of its own is rounded up to a multiple of this.
pub const ROUND_LARGE: u64 = 2 << 20;

const NONE: u32 = u32::MAX;

/// One block of a segment.
#[derive(Clone, Copy, Debug)]
struct Block {
    /// Address (only its order matters).
    ptr: u64,
    size: u64,
    prev: u32,
    next: u32,
    allocated: bool,
    small: bool,
}

/// A handle to an allocation, to free it with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation(u32);

/// The allocator's state and its high-water marks.
#[derive(Clone, Debug, Default)]
pub struct CachingAllocator {
    blocks: Vec<Block>,
    /// Free blocks by pool (small, large), keyed by size then address (`size << 64 | address`), to their
    /// index.
    free: [BTreeMap<u128, u32>; 2],
    /// Block slots no longer in any segment (merged away), for reuse.
    spare: Vec<u32>,
    next_ptr: u64,
    /// Bytes handed out now.
    pub allocated: u64,
    /// Bytes of all segments now.
    pub reserved: u64,
    /// Largest `allocated` seen.
    pub peak_allocated: u64,
    /// Largest `reserved` seen.
    pub peak_reserved: u64,
    /// Bytes of segments that are wholly free: what `release_cached_blocks` would give back to the driver
    /// before an out-of-memory error.
    pub free_whole_segments: u64,
}

/// `round_size`: the request rounded up to a multiple of 512 B (at least 512 B).
pub fn round_size(bytes: u64) -> u64 {
    bytes.max(1).div_ceil(MIN_BLOCK) * MIN_BLOCK
}

/// `get_allocation_size`: the size of the segment `cudaMalloc` gets when no cached block fits.
pub fn segment_size(size: u64) -> u64 {
    if size <= SMALL_SIZE {
        SMALL_BUFFER
    } else if size < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        size.div_ceil(ROUND_LARGE) * ROUND_LARGE
    }
}

impl CachingAllocator {
    /// An empty allocator (nothing reserved).
    pub fn new() -> CachingAllocator {
        CachingAllocator::default()
    }

    fn pool(small: bool) -> usize {
        usize::from(!small)
    }

    fn key(&self, i: u32) -> u128 {
        let b = &self.blocks[i as usize];
        (u128::from(b.size) << 64) | u128::from(b.ptr)
    }

    fn new_block(&mut self, block: Block) -> u32 {
        match self.spare.pop() {
            Some(i) => {
                self.blocks[i as usize] = block;
                i
            }
            None => {
                self.blocks.push(block);
                (self.blocks.len() - 1) as u32
            }
        }
    }

    /// Allocates `bytes` (0 allocates nothing and returns `None`).
    pub fn malloc(&mut self, bytes: u64) -> Option<Allocation> {
        if bytes == 0 {
            return None;
        }
        let size = round_size(bytes);
        let small = size <= SMALL_SIZE;
        let pool = Self::pool(small);
        let found = self.free[pool]
            .range(u128::from(size) << 64..)
            .next()
            .map(|(k, i)| (*k, *i));
        let i = match found {
            Some((key, i)) => {
                self.free[pool].remove(&key);
                if self.is_whole_segment(i) {
                    self.free_whole_segments -= self.blocks[i as usize].size;
                }
                i
            }
            None => {
                let seg = segment_size(size);
                let ptr = self.next_ptr;
                self.next_ptr += seg;
                self.reserved += seg;
                self.new_block(Block {
                    ptr,
                    size: seg,
                    prev: NONE,
                    next: NONE,
                    allocated: false,
                    small,
                })
            }
        };
        let remaining = self.blocks[i as usize].size - size;
        let split = if small {
            remaining >= MIN_BLOCK
        } else {
            remaining > SMALL_SIZE
        };
        if split {
            let b = self.blocks[i as usize];
            let r = self.new_block(Block {
                ptr: b.ptr + size,
                size: remaining,
                prev: i,
                next: b.next,
                allocated: false,
                small,
            });
            if b.next != NONE {
                self.blocks[b.next as usize].prev = r;
            }
            let b = &mut self.blocks[i as usize];
            b.next = r;
            b.size = size;
            let key = self.key(r);
            self.free[pool].insert(key, r);
        }
        let b = &mut self.blocks[i as usize];
        b.allocated = true;
        self.allocated += b.size;
        self.peak_allocated = self.peak_allocated.max(self.allocated);
        self.peak_reserved = self.peak_reserved.max(self.reserved);
        Some(Allocation(i))
    }

    /// Frees an allocation; it merges with free neighbours of its segment and stays cached.
    pub fn free(&mut self, allocation: Option<Allocation>) {
        let Some(Allocation(mut i)) = allocation else {
            return;
        };
        let b = self.blocks[i as usize];
        if !b.allocated {
            return;
        }
        self.allocated -= b.size;
        self.blocks[i as usize].allocated = false;
        let pool = Self::pool(b.small);
        let prev = b.prev;
        if prev != NONE && !self.blocks[prev as usize].allocated {
            let key = self.key(prev);
            self.free[pool].remove(&key);
            self.absorb_next(prev);
            i = prev;
        }
        let next = self.blocks[i as usize].next;
        if next != NONE && !self.blocks[next as usize].allocated {
            let key = self.key(next);
            self.free[pool].remove(&key);
            self.absorb_next(i);
        }
        if self.is_whole_segment(i) {
            self.free_whole_segments += self.blocks[i as usize].size;
        }
        let key = self.key(i);
        self.free[pool].insert(key, i);
    }

    fn is_whole_segment(&self, i: u32) -> bool {
        let b = &self.blocks[i as usize];
        b.prev == NONE && b.next == NONE
    }

    /// Merges block `i`'s next neighbour into it.
    fn absorb_next(&mut self, i: u32) {
        let n = self.blocks[i as usize].next;
        let nb = self.blocks[n as usize];
        let b = &mut self.blocks[i as usize];
        b.size += nb.size;
        b.next = nb.next;
        if nb.next != NONE {
            self.blocks[nb.next as usize].prev = i;
        }
        self.spare.push(n);
    }

    /// Cached bytes not handed out now.
    pub fn cached_free(&self) -> u64 {
        self.reserved - self.allocated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn rounding_and_segment_sizes_follow_the_allocator_constants() {
        assert_eq!(round_size(1), 512);
        assert_eq!(round_size(512), 512);
        assert_eq!(round_size(513), 1024);
        assert_eq!(segment_size(MIB), 2 * MIB);
        assert_eq!(segment_size(MIB + 512), 20 * MIB);
        assert_eq!(segment_size(10 * MIB - 512), 20 * MIB);
        assert_eq!(segment_size(10 * MIB), 10 * MIB);
        assert_eq!(segment_size(10 * MIB + 1), 12 * MIB);
    }

    /// Four 4 MiB tensors share one 20 MiB segment; the fifth needs a second one.
    #[test]
    fn mid_sized_requests_share_twenty_mib_segments() {
        let mut a = CachingAllocator::new();
        for _ in 0..4 {
            a.malloc(4 * MIB);
        }
        assert_eq!(a.reserved, 20 * MIB);
        // 4 MiB left in the segment: a fifth fits, a sixth does not.
        a.malloc(4 * MIB);
        assert_eq!(a.reserved, 20 * MIB);
        a.malloc(4 * MIB);
        assert_eq!(a.reserved, 40 * MIB);
        assert_eq!(a.allocated, 24 * MIB);
    }

    /// A freed block is reused for a smaller request and split; the piece left can't serve a request
    /// larger than itself, so that request gets a new segment (fragmentation).
    #[test]
    fn a_split_block_strands_its_remainder() {
        let mut a = CachingAllocator::new();
        let big = a.malloc(100 * MIB);
        a.free(big);
        let small = a.malloc(30 * MIB);
        assert_eq!(a.reserved, 100 * MIB);
        a.malloc(80 * MIB);
        assert_eq!(a.reserved, 180 * MIB);
        a.free(small);
        // Freed 30 MiB merges with the 70 MiB left beside it: 100 MiB free again in the first segment.
        assert_eq!(a.free_whole_segments, 100 * MIB);
        a.malloc(100 * MIB);
        assert_eq!(a.free_whole_segments, 0);
        assert_eq!(a.reserved, 180 * MIB);
        assert_eq!(a.peak_reserved, 180 * MIB);
    }

    /// A large-pool remainder of at most 1 MiB is not split off: the whole block is handed out and
    /// counted as allocated.
    #[test]
    fn small_large_pool_remainders_stay_with_the_block() {
        let mut a = CachingAllocator::new();
        let x = a.malloc(12 * MIB);
        a.free(x);
        a.malloc(11 * MIB + 512);
        assert_eq!(a.allocated, 12 * MIB);
        assert_eq!(a.reserved, 12 * MIB);
    }

    /// Frees merge only inside a segment: two freed neighbouring segments do not serve a request larger
    /// than each.
    #[test]
    fn segments_do_not_merge() {
        let mut a = CachingAllocator::new();
        let x = a.malloc(40 * MIB);
        let y = a.malloc(40 * MIB);
        a.free(x);
        a.free(y);
        a.malloc(60 * MIB);
        assert_eq!(a.reserved, 140 * MIB);
    }

    /// Best fit: the smallest cached block that is large enough is taken.
    #[test]
    fn best_fit_takes_the_smallest_block_that_fits() {
        let mut a = CachingAllocator::new();
        let x = a.malloc(64 * MIB);
        let y = a.malloc(32 * MIB);
        a.free(x);
        a.free(y);
        a.malloc(30 * MIB);
        // Served from the 32 MiB segment: the 64 MiB one stays whole for this request.
        a.malloc(64 * MIB);
        assert_eq!(a.reserved, 96 * MIB);
    }

    #[test]
    fn small_requests_use_two_mib_segments() {
        let mut a = CachingAllocator::new();
        for _ in 0..4 {
            a.malloc(512 * 1024);
        }
        assert_eq!(a.reserved, 2 * MIB);
        a.malloc(512);
        assert_eq!(a.reserved, 4 * MIB);
        assert_eq!(a.allocated, 2 * MIB + 512);
    }
}
