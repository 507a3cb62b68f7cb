// BLAKE3's bulk work in OpenCL C 1.2: chunk chaining values and the tree above them, reduced inside
// each work-group in local memory.
//
// Compiled as `prelude + this file`; the prelude (written by build.rs from src/core/constants.rs
// and src/backends/gpu/layout.rs) defines IV0..IV7, the domain flags, BLOCK_LEN, CHUNK_LEN,
// ROUNDS, the message schedule S{round}_{i}, PIECE_SLOTS and TAIL_AT. The host adds, with -D:
//   CHUNK_WG   work-items per work-group of `chunk_cvs` (a power of two): one chunk each
//   PARENT_WG  work-items per work-group of `parent_cvs` (a power of two): one CV each
//   STAGED     1 to stage chunk loads through local memory, 0 to load straight from global memory
//   MERKLE_WG  work-items per work-group of `merkle_levels` (a power of two): two nodes each
//
// The tree a dispatch computes. Work-group g of `chunk_cvs` hashes chunks [g*W, g*W + W) of its
// input (W = CHUNK_WG, or `group_chunks`, a power of two down to 32, for a small input spread
// over more groups: see src/backends/gpu/groups.rs). A full group reduces its W chunk CVs by `levels` = L levels (a kernel
// argument, 0 to log2 W) to the CVs of W / 2^L complete subtrees of 2^L chunks each and writes them
// to `group_cvs[g * W / 2^L ..]`; the next dispatch (`parent_cvs`, the same scheme with all levels
// of its group) reduces those. The host picks L per call: the fewest dispatches, and among those
// the fewest levels down to the last one that keeps 32 work-items busy. The sparse top levels of
// a group (16, 8, 4, 2, 1 busy work-items, each costing a whole SIMD instruction stream) are
// then left to the parent kernel, where they are a small share of the work (faster than reducing
// all levels here: docs/performance.md). Only the last group of a dispatch can be
// ragged: it holds `valid < W` nodes,
// which form one complete subtree per set bit of `valid` (BLAKE3's tree is left-heavy). Such a
// group writes the CV of the subtree of 2^l nodes to `pieces[piece_level + l]`, where piece_level
// is log2 of the chunks one node of its input stands for. After the last dispatch `pieces[b]`
// holds, for every set bit b of the total chunk count, the CV of the complete subtree of 2^b
// chunks: exactly what `Backend::chunk_subtrees` returns. No node here is ever a root. A dispatch
// with exactly one full group (and perhaps a ragged one) is the last: its full group writes its CV
// straight to its piece slot, so that no copy command follows.
//
// A cap of 2^k chunks (`Backend::chunk_subtrees_capped`) stops the passes at level k: the last
// dispatch reduces only up to k (`levels` of either kernel) and its `group_cvs` are every level-k
// CV, which the host reads back with the pieces below k (src/backends/gpu/capped.rs).

#if !defined(CHUNK_WG) || !defined(PARENT_WG) || !defined(STAGED) || !defined(MERKLE_WG)
#error "the host defines CHUNK_WG, PARENT_WG, STAGED and MERKLE_WG"
#endif

// Tuning knobs a caller may set through the build options (benches/probes/opencl_bench.rs tries
// them):
//   PREFETCH       with direct loads, load block b+1 while block b is compressed. Default 1: it
//                  pays most at 64 MiB, where fewer work-items must hide the latency.
//   UNROLL_BLOCKS  1: unroll the 16 blocks of a chunk; N >= 2: unroll by N (with PREFETCH, the
//                  next block's registers then become this block's message without moves).
//                  Default 0: fully unrolled is slower (docs/performance.md).
#ifndef PREFETCH
#define PREFETCH 1
#endif
#ifndef UNROLL_BLOCKS
#define UNROLL_BLOCKS 0
#endif
#define B3_STR(x) #x
#define B3_UNROLL(n) _Pragma(B3_STR(unroll n))
#if UNROLL_BLOCKS == 1
#define BLOCK_LOOP _Pragma("unroll")
#elif UNROLL_BLOCKS > 1
#define BLOCK_LOOP B3_UNROLL(UNROLL_BLOCKS)
#else
#define BLOCK_LOOP
#endif

// Rotate right; OpenCL's rotate() turns left.
#define ROTR(x, n) rotate((x), (uint)(32u - (n)))

#define G(a, b, c, d, x, y)       \
    a = a + b + (x);              \
    d = ROTR(d ^ a, 16u);         \
    c = c + d;                    \
    b = ROTR(b ^ c, 12u);         \
    a = a + b + (y);              \
    d = ROTR(d ^ a, 8u);          \
    c = c + d;                    \
    b = ROTR(b ^ c, 7u);

// Round r with the schedule macros from the prelude: every message index is a constant, so `m`
// lives in registers.
#define ROUND_(r)                                                   \
    G(v0, v4, v8,  v12, m[S##r##_0],  m[S##r##_1]);                 \
    G(v1, v5, v9,  v13, m[S##r##_2],  m[S##r##_3]);                 \
    G(v2, v6, v10, v14, m[S##r##_4],  m[S##r##_5]);                 \
    G(v3, v7, v11, v15, m[S##r##_6],  m[S##r##_7]);                 \
    G(v0, v5, v10, v15, m[S##r##_8],  m[S##r##_9]);                 \
    G(v1, v6, v11, v12, m[S##r##_10], m[S##r##_11]);                \
    G(v2, v7, v8,  v13, m[S##r##_12], m[S##r##_13]);                \
    G(v3, v4, v9,  v14, m[S##r##_14], m[S##r##_15]);
#define ROUND(r) ROUND_(r)

// The compression function, keeping only the first half of the output: cv = compress(cv, m,
// counter, block_len, flags)[0..8].
inline void compress_cv(uint cv[8], const uint m[16], ulong counter, uint block_len, uint flags) {
    uint v0 = cv[0], v1 = cv[1], v2 = cv[2], v3 = cv[3];
    uint v4 = cv[4], v5 = cv[5], v6 = cv[6], v7 = cv[7];
    uint v8 = IV0, v9 = IV1, v10 = IV2, v11 = IV3;
    uint v12 = (uint)counter, v13 = (uint)(counter >> 32), v14 = block_len, v15 = flags;
    ROUND(0) ROUND(1) ROUND(2) ROUND(3) ROUND(4) ROUND(5) ROUND(6)
    cv[0] = v0 ^ v8;  cv[1] = v1 ^ v9;  cv[2] = v2 ^ v10; cv[3] = v3 ^ v11;
    cv[4] = v4 ^ v12; cv[5] = v5 ^ v13; cv[6] = v6 ^ v14; cv[7] = v7 ^ v15;
}

inline void key_words(uint cv[8], uint8 key) {
    cv[0] = key.s0; cv[1] = key.s1; cv[2] = key.s2; cv[3] = key.s3;
    cv[4] = key.s4; cv[5] = key.s5; cv[6] = key.s6; cv[7] = key.s7;
}

inline void put4(uint m[16], uint i, uint4 w) {
    m[i] = w.x; m[i + 1] = w.y; m[i + 2] = w.z; m[i + 3] = w.w;
}

// Reduces a work-group's nodes until `out_width` are left, the CVs of its subtrees, and writes
// those to group_cvs[group * out_width ..]; a ragged group writes the subtrees of the set bits
// below that level to its pieces (see the top of this file), and `top` (the dispatch's only node
// at that level) goes to its piece slot. `nodes` holds `width` nodes word-major (word i of node j
// at nodes[i * width + j]); `spare` has room for width / 2 more. Every work-item of the group
// calls it (it has barriers); `valid` is how many nodes are real.
inline void reduce_group(__local uint *nodes, __local uint *spare, uint width, uint out_width,
                         uint lid, uint valid, uint8 key, uint flags, __global uint *group_cvs,
                         size_t group, __global uint *pieces, uint piece_level, bool top) {
    __local uint *src = nodes;
    __local uint *dst = spare;
    uint count = valid;  // complete nodes at this level
    uint level = piece_level;
    barrier(CLK_LOCAL_MEM_FENCE);
    while (width > out_width) {
        if ((count & 1u) && lid == count - 1u) {
            // An unpaired last node: the CV of a complete subtree, and not a root.
            for (uint i = 0; i < 8u; i++) pieces[level * 8u + i] = src[i * width + lid];
        }
        uint next_width = width >> 1;
        if (lid < next_width) {
            uint m[16];
            for (uint i = 0; i < 8u; i++) {
                m[i] = src[i * width + 2u * lid];
                m[i + 8u] = src[i * width + 2u * lid + 1u];
            }
            uint cv[8];
            key_words(cv, key);
            compress_cv(cv, m, 0, BLOCK_LEN, flags | PARENT);
            for (uint i = 0; i < 8u; i++) dst[i * next_width + lid] = cv[i];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        __local uint *t = src;
        src = dst;
        dst = t;
        width = next_width;
        count >>= 1;
        level++;
    }
    // `count` complete nodes of this level are left (out_width for a full group).
    if (top) {
        if (lid == 0 && count == 1u) {
            for (uint i = 0; i < 8u; i++) pieces[level * 8u + i] = src[i * width];
        }
    } else if (lid < count) {
        __global uint *dst = group_cvs + (group * out_width + lid) * 8u;
        for (uint i = 0; i < 8u; i++) dst[i] = src[i * width + lid];
    }
}

// TAIL_AT (from the generated prelude, src/backends/gpu/layout.rs): the byte offset in the pieces
// buffer where a dispatch sequence leaves an input's last chunk, after its PIECE_SLOTS CV slots.

// One work-item per chunk: n_chunks full chunks starting `chunk_offset` chunks into `data`; the
// first has chunk counter `first_counter`. Work-group 0 also copies `tail_len` bytes of `data` from
// byte `tail_at` (an input's last chunk) to byte TAIL_AT of `pieces`, so that one read brings the
// CVs and the last chunk back with no copy command in between.
__kernel __attribute__((reqd_work_group_size(CHUNK_WG, 1, 1)))
void chunk_cvs(__global const uint4 *data, ulong chunk_offset, ulong n_chunks,
               ulong first_counter, uint8 key, uint flags, __global uint *group_cvs,
               __global uint *pieces, ulong tail_at, uint tail_len, uint levels,
               uint group_chunks) {
    // Local memory: the CV tree (CHUNK_WG nodes + half as many); with STAGED, first two tiles of
    // one block per chunk, 20 words apart so that a quarter-warp's 16-byte reads hit distinct
    // banks. The tree reuses the tiles once the chunks are done.
#if STAGED
    __local uint4 lmem[2 * CHUNK_WG * 5];
    __local uint4 *tile0 = lmem;
    __local uint4 *tile1 = lmem + CHUNK_WG * 5;
#else
    __local uint4 lmem[CHUNK_WG * 3];
#endif
    __local uint *tree = (__local uint *)lmem;
    const uint lid = (uint)get_local_id(0);
    const size_t group = get_group_id(0);
    // The chunks this group takes: CHUNK_WG, or fewer (a power of two, at least a warp's worth)
    // for a small input spread over more groups; the group's other work-items idle.
    const uint width = group_chunks;
    const ulong group_first = (ulong)group * width;
    const ulong remaining = n_chunks - group_first;
    const uint valid = remaining < width ? (uint)remaining : width;
    const ulong chunk = group_first + lid;
    __global const uint4 *base = data + (chunk_offset + group_first) * (CHUNK_LEN / 16u);
    if (group == 0) {
        __global const uchar *from = (__global const uchar *)data + tail_at;
        __global uchar *to = (__global uchar *)pieces + TAIL_AT;
        for (uint i = lid; i < tail_len; i += CHUNK_WG) to[i] = from[i];
    }

    uint cv[8];
    key_words(cv, key);
    uint m[16] = {0};
#if STAGED
    // Block b of the group's chunks is read in four passes; in each pass work-item t reads 16
    // bytes of chunk (p * CHUNK_WG + t) / 4, so neighbours read neighbouring memory. The next
    // block is in flight while this one is compressed.
    uint4 next[4];
    for (uint p = 0; p < 4u; p++) {
        uint idx = p * CHUNK_WG + lid;
        uint c = idx >> 2;
        next[p] = c < valid ? base[c * (CHUNK_LEN / 16u) + (idx & 3u)] : (uint4)(0);
    }
    for (uint p = 0; p < 4u; p++) {
        uint idx = p * CHUNK_WG + lid;
        tile0[(idx >> 2) * 5u + (idx & 3u)] = next[p];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    BLOCK_LOOP
    for (uint b = 0; b < 16u; b++) {
        if (b < 15u) {
            for (uint p = 0; p < 4u; p++) {
                uint idx = p * CHUNK_WG + lid;
                uint c = idx >> 2;
                next[p] = c < valid ? base[c * (CHUNK_LEN / 16u) + (b + 1u) * 4u + (idx & 3u)]
                                    : (uint4)(0);
            }
        }
        __local const uint4 *mine = ((b & 1u) ? tile1 : tile0) + lid * 5u;
        put4(m, 0, mine[0]);
        put4(m, 4, mine[1]);
        put4(m, 8, mine[2]);
        put4(m, 12, mine[3]);
        uint f = flags | (b == 0 ? CHUNK_START : 0u) | (b == 15u ? CHUNK_END : 0u);
        compress_cv(cv, m, first_counter + chunk, BLOCK_LEN, f);
        if (b < 15u) {
            for (uint p = 0; p < 4u; p++) {
                uint idx = p * CHUNK_WG + lid;
                ((b & 1u) ? tile0 : tile1)[(idx >> 2) * 5u + (idx & 3u)] = next[p];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    // Each work-item reads its own chunk, 64 contiguous bytes per block. Work-items past the
    // group's width skip the work (whole warps: the width is a multiple of 32 where it is less
    // than CHUNK_WG).
    __global const uint4 *own = base + (size_t)lid * (CHUNK_LEN / 16u);
    const bool real = lid < valid;
    if (lid < width) {
#if PREFETCH
    // The next block's loads are issued before this block's rounds.
    uint4 n0 = (uint4)(0), n1 = (uint4)(0), n2 = (uint4)(0), n3 = (uint4)(0);
    if (real) {
        n0 = own[0]; n1 = own[1]; n2 = own[2]; n3 = own[3];
    }
    BLOCK_LOOP
    for (uint b = 0; b < 16u; b++) {
        put4(m, 0, n0);
        put4(m, 4, n1);
        put4(m, 8, n2);
        put4(m, 12, n3);
        if (real && b < 15u) {
            n0 = own[b * 4u + 4u];
            n1 = own[b * 4u + 5u];
            n2 = own[b * 4u + 6u];
            n3 = own[b * 4u + 7u];
        }
        uint f = flags | (b == 0 ? CHUNK_START : 0u) | (b == 15u ? CHUNK_END : 0u);
        compress_cv(cv, m, first_counter + chunk, BLOCK_LEN, f);
    }
#else
    BLOCK_LOOP
    for (uint b = 0; b < 16u; b++) {
        if (real) {
            put4(m, 0, own[b * 4u]);
            put4(m, 4, own[b * 4u + 1u]);
            put4(m, 8, own[b * 4u + 2u]);
            put4(m, 12, own[b * 4u + 3u]);
        }
        uint f = flags | (b == 0 ? CHUNK_START : 0u) | (b == 15u ? CHUNK_END : 0u);
        compress_cv(cv, m, first_counter + chunk, BLOCK_LEN, f);
    }
#endif
    }
#endif
    if (lid < width) {
        for (uint i = 0; i < 8u; i++) tree[i * width + lid] = cv[i];
    }
    reduce_group(tree, tree + CHUNK_WG * 8, width, width >> levels, lid, valid, key, flags,
                 group_cvs, group, pieces, 0, (n_chunks >> levels) == 1);
}

// One work-item per node of the level below: n_nodes CVs (8 words each), each standing for
// 2^piece_level chunks, reduced the same way by `levels` levels (log2 PARENT_WG but where a cap
// stops the tree lower).
__kernel __attribute__((reqd_work_group_size(PARENT_WG, 1, 1)))
void parent_cvs(__global const uint4 *nodes, ulong n_nodes, uint8 key, uint flags,
                __global uint *group_cvs, __global uint *pieces, uint piece_level, uint levels) {
    __local uint tree[PARENT_WG * 8 + PARENT_WG * 4];
    const uint lid = (uint)get_local_id(0);
    const size_t group = get_group_id(0);
    const ulong group_first = (ulong)group * PARENT_WG;
    const ulong remaining = n_nodes - group_first;
    const uint valid = remaining < PARENT_WG ? (uint)remaining : PARENT_WG;
    if (lid < valid) {
        uint4 lo = nodes[(group_first + lid) * 2u];
        uint4 hi = nodes[(group_first + lid) * 2u + 1u];
        tree[0 * PARENT_WG + lid] = lo.x;
        tree[1 * PARENT_WG + lid] = lo.y;
        tree[2 * PARENT_WG + lid] = lo.z;
        tree[3 * PARENT_WG + lid] = lo.w;
        tree[4 * PARENT_WG + lid] = hi.x;
        tree[5 * PARENT_WG + lid] = hi.y;
        tree[6 * PARENT_WG + lid] = hi.z;
        tree[7 * PARENT_WG + lid] = hi.w;
    }
    reduce_group(tree, tree + PARENT_WG * 8, PARENT_WG, PARENT_WG >> levels, lid, valid, key, flags,
                 group_cvs, group, pieces, piece_level, (n_nodes >> levels) == 1);
}

// One work-item per 64-byte block, each hashed as a complete one-block message: hash(block).
__kernel void hash_blocks(__global const uint4 *blocks, ulong n_blocks, __global uint4 *out) {
    const size_t i = get_global_id(0);
    if (i >= n_blocks) return;
    uint m[16];
    put4(m, 0, blocks[i * 4u]);
    put4(m, 4, blocks[i * 4u + 1u]);
    put4(m, 8, blocks[i * 4u + 2u]);
    put4(m, 12, blocks[i * 4u + 3u]);
    uint cv[8] = {IV0, IV1, IV2, IV3, IV4, IV5, IV6, IV7};
    compress_cv(cv, m, 0, BLOCK_LEN, CHUNK_START | CHUNK_END | ROOT);
    out[i * 2u] = (uint4)(cv[0], cv[1], cv[2], cv[3]);
    out[i * 2u + 1u] = (uint4)(cv[4], cv[5], cv[6], cv[7]);
}

// ------------------------------------------------------------------------------------------------
// Binary Merkle trees of 32-byte nodes (src/api/merkle.rs). A parent is compress_cv(key, left ||
// right, counter 0, 64 bytes, flags); the merkle module's trees use the IV and CHUNK_START |
// CHUNK_END | ROOT, which makes a parent the plain BLAKE3 hash of the 64 bytes. A level pairs nodes
// 0 and 1, 2 and 3, ...; an odd last node is carried up unchanged (neither hashed nor stored).
//
// With that rule node i of level j (level 0: the n leaves) is the root over leaves
// [i * 2^j, min((i + 1) * 2^j, n)), so a work-group that holds 2 * MERKLE_WG consecutive nodes of
// a level, from a multiple of 2 * MERKLE_WG, computes the next `levels` levels of its part of the
// tree on its own (the ragged last group too, by the same rule applied to its own count). A level
// stores floor(c / 2) nodes for the c nodes below it, and since every group but the last holds an
// even number of nodes on each of its levels, the nodes a group hashes are exactly the stored ones,
// at its first node's index on that level plus the local index.

// Node k of a level: uint4 words 2k and 2k + 1.
inline void load_node(__global const uint4 *nodes, ulong k, uint m[16], uint at) {
    put4(m, at, nodes[2u * k]);
    put4(m, at + 4u, nodes[2u * k + 1u]);
}

inline void store_node(__global uint4 *nodes, ulong k, const uint cv[8]) {
    nodes[2u * k] = (uint4)(cv[0], cv[1], cv[2], cv[3]);
    nodes[2u * k + 1u] = (uint4)(cv[4], cv[5], cv[6], cv[7]);
}

// Reduces `levels` (1 to log2(2 * MERKLE_WG)) levels of a level of `n_in` nodes in `in`: writes
// the resulting level (ceil(n_in / 2^levels) nodes) to `out`, and with `keep` every node hashed on
// the way to `inner`, the level produced first starting at node `inner_at`, each following level
// right after the one before (the layout of merkle::level_sizes).
__kernel __attribute__((reqd_work_group_size(MERKLE_WG, 1, 1)))
void merkle_levels(__global const uint4 *in, ulong n_in, uint levels, uint8 key, uint flags,
                   __global uint4 *out, __global uint4 *inner, ulong inner_at, uint keep) {
    // Word-major (word i of slot s at i * width + s): MERKLE_WG slots of the first level kept
    // here, and half as many for the next; the two take turns.
    __local uint slots[MERKLE_WG * 8 + MERKLE_WG * 4];
    const uint lid = (uint)get_local_id(0);
    const ulong first = (ulong)get_group_id(0) * (2u * MERKLE_WG);
    const ulong rest = n_in - first;
    uint count = rest < 2u * MERKLE_WG ? (uint)rest : 2u * MERKLE_WG;  // this group's nodes
    ulong total = n_in;       // the whole level's nodes
    ulong level_at = inner_at;  // where the level being made starts in `inner`

    // The first level: a pair straight from global memory, in registers.
    uint m[16];
    uint cv[8];
    uint pairs = count >> 1;
    if (lid < pairs) {
        load_node(in, first + 2u * lid, m, 0);
        load_node(in, first + 2u * lid + 1u, m, 8);
        key_words(cv, key);
        compress_cv(cv, m, 0, BLOCK_LEN, flags);
        if (keep) store_node(inner, level_at + (first >> 1) + lid, cv);
    } else if (lid == pairs && (count & 1u)) {
        load_node(in, first + 2u * lid, m, 0);
        for (uint i = 0; i < 8u; i++) cv[i] = m[i];
    }
    level_at += total >> 1;
    total = (total + 1u) >> 1;
    count = (count + 1u) >> 1;

    __local uint *src = slots;
    __local uint *dst = slots + MERKLE_WG * 8;
    uint width = MERKLE_WG;
    if (levels > 1u && lid < count) {
        for (uint i = 0; i < 8u; i++) src[i * width + lid] = cv[i];
    }
    for (uint level = 2; level <= levels; level++) {
        barrier(CLK_LOCAL_MEM_FENCE);
        uint next_width = width >> 1;
        pairs = count >> 1;
        if (lid < pairs) {
            for (uint i = 0; i < 8u; i++) {
                m[i] = src[i * width + 2u * lid];
                m[i + 8u] = src[i * width + 2u * lid + 1u];
            }
            key_words(cv, key);
            compress_cv(cv, m, 0, BLOCK_LEN, flags);
            if (keep) store_node(inner, level_at + (first >> level) + lid, cv);
        } else if (lid == pairs && (count & 1u)) {
            for (uint i = 0; i < 8u; i++) cv[i] = src[i * width + 2u * lid];
        }
        level_at += total >> 1;
        total = (total + 1u) >> 1;
        count = (count + 1u) >> 1;
        if (level < levels && lid < count) {
            for (uint i = 0; i < 8u; i++) dst[i * next_width + lid] = cv[i];
        }
        __local uint *t = src;
        src = dst;
        dst = t;
        width = next_width;
    }
    // The last level made: work-item t holds node t of it, in registers.
    if (lid < count) store_node(out, (first >> levels) + lid, cv);
}

// ------------------------------------------------------------------------------------------------
// Many equal-length messages laid end to end (Backend::hash_many).

// Loads `len` bytes (at most 64) from `p` as little-endian words into m, zero-padded. `align` is
// what the host guarantees for `p`: 16, 4 or 1 bytes.
inline void load_block(__global const uchar *p, uint len, uint align, uint m[16]) {
    if (len == BLOCK_LEN && align == 16u) {
        __global const uint4 *q = (__global const uint4 *)p;
        put4(m, 0, q[0]);
        put4(m, 4, q[1]);
        put4(m, 8, q[2]);
        put4(m, 12, q[3]);
        return;
    }
#pragma unroll
    for (uint w = 0; w < 16u; w++) {
        uint at = 4u * w;
        uint x = 0;
        if (at + 4u <= len) {
            x = align >= 4u ? ((__global const uint *)p)[w]
                            : (uint)p[at] | (uint)p[at + 1u] << 8 | (uint)p[at + 2u] << 16 |
                                  (uint)p[at + 3u] << 24;
        } else if (at < len) {
            // The last 1 to 3 bytes.
            uint rest = len - at;
            x = (uint)p[at];
            if (rest > 1u) x |= (uint)p[at + 1u] << 8;
            if (rest > 2u) x |= (uint)p[at + 2u] << 16;
        }
        m[w] = x;
    }
}

// The chaining value (or with ROOT in `end`, the hash) of a chunk of 1 to 1024 bytes at `p` with
// chunk counter `counter`.
inline void hash_chunk(__global const uchar *p, uint len, ulong counter, uint align, uint8 key,
                       uint flags, uint end, uint cv[8]) {
    const uint blocks = (len + BLOCK_LEN - 1u) / BLOCK_LEN;
    key_words(cv, key);
    uint m[16];
    for (uint b = 0; b < blocks; b++) {
        uint block_len = min(len - b * BLOCK_LEN, BLOCK_LEN);
        load_block(p + b * BLOCK_LEN, block_len, align, m);
        uint f = flags | (b == 0 ? CHUNK_START : 0u) | (b + 1u == blocks ? end : 0u);
        compress_cv(cv, m, counter, block_len, f);
    }
}

// One work-item per message of 1 to 1024 bytes, each its own root: work-item g hashes message
// first_msg + g into node out_at + g of `out`.
__kernel void many_one(__global const uchar *data, ulong msg_len, ulong first_msg, uint n_items,
                       uint align, uint8 key, uint flags, __global uint4 *out, ulong out_at) {
    const uint g = (uint)get_global_id(0);
    if (g >= n_items) return;
    uint cv[8];
    hash_chunk(data + (first_msg + g) * msg_len, (uint)msg_len, 0, align, key, flags,
               CHUNK_END | ROOT, cv);
    store_node(out, out_at + g, cv);
}

// One work-item per chunk of each message of two or more chunks: work-item g hashes chunk
// g % chunks of message first_msg + g / chunks (chunk j has counter j) into node out_at + g of
// `out`: its chaining value, for many_merge.
__kernel void many_chunks(__global const uchar *data, ulong msg_len, ulong first_msg, uint n_items,
                          uint chunks, uint align, uint8 key, uint flags, __global uint4 *out,
                          ulong out_at) {
    const uint g = (uint)get_global_id(0);
    if (g >= n_items) return;
    const uint i = g / chunks;
    const uint j = g - i * chunks;
    const ulong skip = (ulong)j * CHUNK_LEN;
    const ulong left = msg_len - skip;
    const uint len = left < CHUNK_LEN ? (uint)left : CHUNK_LEN;
    uint cv[8];
    hash_chunk(data + (first_msg + i) * msg_len + skip, len, j, align, key, flags, CHUNK_END, cv);
    store_node(out, out_at + g, cv);
}

// One work-item per message of `chunks` >= 2 chunks: merges its chunks' chaining values, which
// many_chunks left side by side in `cvs`, into the message's hash. BLAKE3's tree gives a node's
// left subtree the largest power of two of chunks below its count, which is the shape the Merkle
// rule above (pairs, the odd last node carried up) gives too: so the CVs are reduced that way, in
// place, with parent compressions, the last one as the root.
__kernel void many_merge(__global uint4 *cvs, uint n_msgs, uint chunks, uint8 key, uint flags,
                         __global uint4 *out, ulong out_at) {
    const uint i = (uint)get_global_id(0);
    if (i >= n_msgs) return;
    __global uint4 *mine = cvs + (size_t)i * chunks * 2u;
    uint m[16];
    uint cv[8];
    uint n = chunks;
    while (n > 2u) {
        uint pairs = n >> 1;
        for (uint k = 0; k < pairs; k++) {
            load_node(mine, 2u * k, m, 0);
            load_node(mine, 2u * k + 1u, m, 8);
            key_words(cv, key);
            compress_cv(cv, m, 0, BLOCK_LEN, flags | PARENT);
            store_node(mine, k, cv);
        }
        if (n & 1u) {
            mine[2u * pairs] = mine[2u * (n - 1u)];
            mine[2u * pairs + 1u] = mine[2u * (n - 1u) + 1u];
        }
        n = pairs + (n & 1u);
    }
    load_node(mine, 0, m, 0);
    load_node(mine, 1, m, 8);
    key_words(cv, key);
    compress_cv(cv, m, 0, BLOCK_LEN, flags | PARENT | ROOT);
    store_node(out, out_at + i, cv);
}

// ------------------------------------------------------------------------------------------------
// Bao outboards (src/backends/gpu/bao.rs; the same math on the host, with its tests, in
// src/tree/bao_shape.rs). `merkle_levels` over the n chunk groups' chaining values, with the IV as
// key and PARENT as flags, keeps every parent of BLAKE3's tree over the groups as an inner node:
// node j of level h covers groups [j << h, min((j + 1) << h, n)) and is stored where it has a
// right child. `bao_place` writes each stored node's two children (64 bytes) at its index in a
// pre-order (order 0) or post-order (order 1) outboard, one work-item per inner node, and the
// root's two children after the n - 1 inner nodes too, for the host. `bao_fold` makes a group's
// chaining value that no capped pass wrote (a partial last group, or a full group alone).

// A chunk group's chaining value from its first `chunks` full chunks, as the passes before left
// them in `pieces` (slot b: the subtree of 2^b chunks, for each set bit b of `chunks`), and its
// partial last chunk of `partial_len` bytes (0: none) at byte `partial_at` of `data` (a multiple
// of CHUNK_LEN), with chunk counter `counter`: merged right to left, as BLAKE3's left-heavy tree
// pairs them, and never a root. One work-item; writes node `group` of `groups`.
__kernel void bao_fold(__global const uint4 *pieces, ulong chunks, __global const uchar *data,
                       ulong partial_at, uint partial_len, ulong counter, __global uint4 *groups,
                       ulong group) {
    const uint8 iv = (uint8)(IV0, IV1, IV2, IV3, IV4, IV5, IV6, IV7);
    uint cv[8];
    bool have = partial_len > 0u;
    if (have) hash_chunk(data + partial_at, partial_len, counter, 16u, iv, 0u, CHUNK_END, cv);
    for (uint b = 0; b < 64u; b++) {
        if (((chunks >> b) & 1ul) == 0ul) continue;
        uint m[16];
        load_node(pieces, b, m, 0);
        if (have) {
            for (uint i = 0; i < 8u; i++) m[i + 8u] = cv[i];
            key_words(cv, iv);
            compress_cv(cv, m, 0, BLOCK_LEN, PARENT);
        } else {
            for (uint i = 0; i < 8u; i++) cv[i] = m[i];
            have = true;
        }
    }
    store_node(groups, group, cv);
}

// Index in `inner` of the first node of level `level` (1 or more) over n groups.
inline ulong level_start(ulong n, uint level) {
    ulong at = 0;
    for (uint h = 1; h < level; h++) {
        at += n >> 1;
        n = (n + 1u) >> 1;
    }
    return at;
}

// The chaining value of the node over `count` groups from group `first`: the group's, or the
// inner node of level ceil(log2 count), where it was hashed; as two uint4 into out[0..2].
inline void kept_cv(__global const uint4 *groups, __global const uint4 *inner, ulong n, ulong first,
                    ulong count, uint4 out[2]) {
    if (count == 1u) {
        out[0] = groups[2u * first];
        out[1] = groups[2u * first + 1u];
        return;
    }
    const uint level = 64u - (uint)clz(count - 1u);
    const ulong at = level_start(n, level) + (first >> level);
    out[0] = inner[2u * at];
    out[1] = inner[2u * at + 1u];
}

__kernel void bao_place(__global const uint4 *groups, __global uint4 *inner, ulong n, uint order,
                        __global uint4 *out) {
    const ulong i = get_global_id(0);
    if (i + 1u >= n) return;
    // Inner node i: level `level`, index j in it.
    ulong at = 0, count = n;
    uint level = 1;
    while (i >= at + (count >> 1)) {
        at += count >> 1;
        count = (count + 1u) >> 1;
        level++;
    }
    const ulong s = (i - at) << level;  // its first group
    const ulong left = 1ul << (level - 1u);
    // The parents before its subtree: one complete subtree per set bit of s.
    ulong index = s - (ulong)popcount(s);
    if (order == 0u) {
        // Pre-order: and its ancestors, the levels above whose node over s has a right child.
        const uint top = 64u - (uint)clz(n - 1u);
        for (uint h = level + 1u; h <= top; h++) {
            if (((s >> h) << h) + (1ul << (h - 1u)) < n) index++;
        }
    } else {
        // Post-order: and the other parents of its own subtree.
        index += min(2u * left, n - s) - 2u;
    }
    uint4 pair[4];
    kept_cv(groups, inner, n, s, left, pair);
    kept_cv(groups, inner, n, s + left, min(left, n - s - left), pair + 2);
    for (uint w = 0; w < 4u; w++) out[4u * index + w] = pair[w];
    // The root, the last inner node: its pair after the inner nodes too (read by nothing here).
    if (i + 2u == n) {
        for (uint w = 0; w < 4u; w++) inner[2u * (n - 1u) + w] = pair[w];
    }
}
