// BLAKE3's bulk work in OpenCL C 1.2: chunk chaining values and the tree above them, reduced inside
// each work-group in local memory.
//
// Compiled as `prelude + this file`; the prelude (written by build.rs from src/constants.rs)
// defines IV0..IV7, the domain flags, BLOCK_LEN, CHUNK_LEN, ROUNDS and the message schedule
// S{round}_{i}. The host adds, with -D:
//   CHUNK_WG   work-items per work-group of `chunk_cvs` (a power of two): one chunk each
//   PARENT_WG  work-items per work-group of `parent_cvs` (a power of two): one CV each
//   STAGED     1 to stage chunk loads through local memory, 0 to load straight from global memory
//
// The tree a dispatch computes. Work-group g of `chunk_cvs` hashes chunks [g*W, g*W + W) of its
// input (W = CHUNK_WG). A full group reduces its W chunk CVs to the CV of one complete subtree of
// W chunks and writes it to `group_cvs[g]`; the next dispatch (`parent_cvs`, same scheme one level
// up) reduces those. Only the last group of a dispatch can be ragged: it holds `valid < W` nodes,
// which form one complete subtree per set bit of `valid` (BLAKE3's tree is left-heavy). Such a
// group writes the CV of the subtree of 2^l nodes to `pieces[piece_level + l]`, where piece_level
// is log2 of the chunks one node of its input stands for. After the last dispatch `pieces[b]`
// holds, for every set bit b of the total chunk count, the CV of the complete subtree of 2^b
// chunks: exactly what `Backend::chunk_subtrees` returns. No node here is ever a root.

#if !defined(CHUNK_WG) || !defined(PARENT_WG) || !defined(STAGED)
#error "the host defines CHUNK_WG, PARENT_WG and STAGED"
#endif

// Tuning knobs a caller may set through the build options (examples/opencl_bench.rs tries them):
//   PREFETCH       with direct loads, load block b+1 while block b is compressed. Default 1: on an
//                  H200 (NVIDIA OpenCL, driver 580) 1.53 against 1.51 TB/s at 1 GiB and 1.02
//                  against 0.92 TB/s at 64 MiB, where fewer work-items must hide the latency.
//   UNROLL_BLOCKS  unroll the 16 blocks of a chunk. Default 0: unrolled ran at 1.27 TB/s there.
#ifndef PREFETCH
#define PREFETCH 1
#endif
#ifndef UNROLL_BLOCKS
#define UNROLL_BLOCKS 0
#endif
#if UNROLL_BLOCKS
#define BLOCK_LOOP _Pragma("unroll")
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

// Reduces a work-group's nodes to the CV of its subtree, or for a ragged group to its pieces (see
// the top of this file). `nodes` holds `width` nodes word-major (word i of node j at
// nodes[i * width + j]); `spare` has room for width / 2 more. Every work-item of the group calls it
// (it has barriers); `valid` is how many nodes are real.
inline void reduce_group(__local uint *nodes, __local uint *spare, uint width, uint lid,
                         uint valid, uint8 key, uint flags, __global uint *group_cvs,
                         size_t group, __global uint *pieces, uint piece_level) {
    __local uint *src = nodes;
    __local uint *dst = spare;
    uint count = valid;  // complete nodes at this level
    uint level = piece_level;
    barrier(CLK_LOCAL_MEM_FENCE);
    while (width > 1u) {
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
    if (lid == 0 && count == 1u) {
        for (uint i = 0; i < 8u; i++) group_cvs[group * 8u + i] = src[i];
    }
}

// One work-item per chunk: n_chunks full chunks starting `chunk_offset` chunks into `data`; the
// first has chunk counter `first_counter`.
__kernel __attribute__((reqd_work_group_size(CHUNK_WG, 1, 1)))
void chunk_cvs(__global const uint4 *data, ulong chunk_offset, ulong n_chunks,
               ulong first_counter, uint8 key, uint flags, __global uint *group_cvs,
               __global uint *pieces) {
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
    const ulong group_first = (ulong)group * CHUNK_WG;
    const ulong remaining = n_chunks - group_first;
    const uint valid = remaining < CHUNK_WG ? (uint)remaining : CHUNK_WG;
    const ulong chunk = group_first + lid;
    __global const uint4 *base = data + (chunk_offset + group_first) * (CHUNK_LEN / 16u);

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
    // Each work-item reads its own chunk, 64 contiguous bytes per block.
    __global const uint4 *own = base + (size_t)lid * (CHUNK_LEN / 16u);
    const bool real = lid < valid;
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
#endif
    for (uint i = 0; i < 8u; i++) tree[i * CHUNK_WG + lid] = cv[i];
    reduce_group(tree, tree + CHUNK_WG * 8, CHUNK_WG, lid, valid, key, flags, group_cvs, group,
                 pieces, 0);
}

// One work-item per node of the level below: n_nodes CVs (8 words each), each standing for
// 2^piece_level chunks, reduced the same way.
__kernel __attribute__((reqd_work_group_size(PARENT_WG, 1, 1)))
void parent_cvs(__global const uint4 *nodes, ulong n_nodes, uint8 key, uint flags,
                __global uint *group_cvs, __global uint *pieces, uint piece_level) {
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
    reduce_group(tree, tree + PARENT_WG * 8, PARENT_WG, lid, valid, key, flags, group_cvs, group,
                 pieces, piece_level);
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
