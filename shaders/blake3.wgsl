// BLAKE3 compute shaders for the wgpu backend (src/backends/wgpu/).
//
// build.rs prepends a generated prelude (IV0..IV7, the flag constants, BLOCK_LEN, CHUNK_LEN and
// MSG_SCHEDULE, all from src/core/constants.rs), so this file carries no copy of BLAKE3's constants.
// build.rs also parses and validates prelude + this file with naga: a mistake here is a build error.
//
// The work, per segment of an input (at most one storage-buffer binding, so every index below fits
// in 32 bits):
// - `chunk_pass` (or `chunk_pass_staged`): one invocation per 1024-byte chunk computes the chunk's
//   chaining value (CV); the workgroup then reduces its G chunk CVs (G = WG >> group_shift: a
//   small input takes as few as 32 a workgroup, spread over more workgroups) by `levels` levels
//   (at least the host's CHUNK_LEVELS, more where that saves a pass) in workgroup memory, to
//   G >> levels subtree CVs.
// - `reduce_pass`: one invocation per CV of the previous pass, reduced the same way, by LOG_WG
//   levels, until one workgroup's worth is left for the last pass, which reduces all of it.
// A segment of n chunks thus takes about ceil((log2(n) - levels) / LOG_WG) + 1 dispatches.
// Only the last workgroup of a pass can be ragged (r < WG items): it emits the complete subtrees
// below the pass's level, one per set bit of r under `levels`, as "pieces" into
// `pieces[piece_slot + bit]`, where piece_slot is the levels of the earlier passes; the last pass
// emits one per set bit of r. So slot k always holds the subtree of
// 2^k chunks: exactly one per set bit of n. The host reads them back largest first. The host
// binds PIECE_SLOTS slots (the generated prelude's, from src/backends/gpu/layout.rs).

// Invocations per workgroup = items reduced per workgroup. 256 is the WebGPU minimum of
// max_compute_invocations_per_workgroup, so every adapter can run it. Keep in step with
// WORKGROUP and LOG_WORKGROUP in src/backends/wgpu/pipelines.rs (a unit test checks).
const WG: u32 = 256u;
const LOG_WG: u32 = 8u;

struct Params {
    // The key words (IV, key, or derived context key).
    key_lo: vec4<u32>,
    key_hi: vec4<u32>,
    // 64-bit chunk counter of the segment's first chunk (chunk passes only). WGSL has no u64:
    // the high word is carried by hand.
    counter_lo: u32,
    counter_hi: u32,
    // Items at this pass: chunks, CVs, or 64-byte blocks (hash_blocks), or bytes (copy_tail).
    n_items: u32,
    // Mode flags (0, KEYED_HASH, DERIVE_KEY_MATERIAL).
    flags: u32,
    // Slot in `pieces` of this pass's bit 0.
    piece_slot: u32,
    // copy_tail: first word of the tail in `tail_src`. A chunk pass: 16-byte words of a
    // device-resident input's last chunk that follow the pass's chunks in `src`, for workgroup 0
    // to copy after the segment's pieces (0: none; see `copy_last_chunk`).
    src_word: u32,
    // Tree levels a workgroup of this pass reduces (1 to LOG_WG), or LOG_WG + 1 for the last pass
    // of a segment (one workgroup of at most WG items: every level, the top one a piece too).
    levels: u32,
    // A pass's workgroups take WG >> group_shift items each (0: WG; never in a last pass, and
    // never below 2^levels items): a small input spread over more workgroups keeps more of the
    // device's compute units busy. The rest of each workgroup's invocations idle.
    group_shift: u32,
}

// The input of a pass: chunks (chunk passes, hash_blocks) or CVs (two vec4 each).
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
// Full-workgroup CVs (two vec4 each), or hash_blocks' outputs, or copy_tail's words.
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
// 64 CV slots: slot k holds the CV of the subtree of 2^k chunks (see above).
@group(0) @binding(2) var<storage, read_write> pieces: array<vec4<u32>>;
@group(0) @binding(3) var<uniform> params: Params;
// copy_tail's input: the last chunk of a device-resident input, as words.
@group(0) @binding(4) var<storage, read> tail_src: array<u32>;

// The chaining values of the workgroup's items as two halves: wlo[i] and whi[i] are words 0-3 and
// 4-7 of item i (16-byte accesses: a quarter of the instructions, and of wgpu's bounds clamps,
// of word-major u32 slots; consecutive invocations storing their own item touch consecutive 16
// bytes, conflict-free). Merkle roots are faster so than with word-major u32 slots
// (docs/performance.md).
var<workgroup> wlo: array<vec4<u32>, 256>; // WG
var<workgroup> whi: array<vec4<u32>, 256>; // WG
// chunk_pass_staged: one 64-byte block of each of the workgroup's chunks, word-major, rows padded
// to WG + 1 words so that the transposing stores and loads spread over the banks.
const STAGE_ROW: u32 = 257u; // WG + 1
var<workgroup> stage: array<u32, 4112>; // 16 * STAGE_ROW

// ---------------------------------------------------------------------------------------------
// The compression function. The 16-word state is four rows of four words; the column step runs
// G on the four columns at once, the diagonal step on the rows rotated by swizzles.

struct State {
    a: vec4<u32>,
    b: vec4<u32>,
    c: vec4<u32>,
    d: vec4<u32>,
}

fn rotr16(x: vec4<u32>) -> vec4<u32> {
    return (x >> vec4<u32>(16u)) | (x << vec4<u32>(16u));
}
fn rotr12(x: vec4<u32>) -> vec4<u32> {
    return (x >> vec4<u32>(12u)) | (x << vec4<u32>(20u));
}
fn rotr8(x: vec4<u32>) -> vec4<u32> {
    return (x >> vec4<u32>(8u)) | (x << vec4<u32>(24u));
}
fn rotr7(x: vec4<u32>) -> vec4<u32> {
    return (x >> vec4<u32>(7u)) | (x << vec4<u32>(25u));
}

fn g(s: State, x: vec4<u32>, y: vec4<u32>) -> State {
    var a = s.a + s.b + x;
    var d = rotr16(s.d ^ a);
    var c = s.c + d;
    var b = rotr12(s.b ^ c);
    a = a + b + y;
    d = rotr8(d ^ a);
    c = c + d;
    b = rotr7(b ^ c);
    return State(a, b, c, d);
}

// One round on the message in schedule order: with the message permuted between rounds (see
// `permute`), every round reads the words of schedule row 0 (the identity). All indices below are
// constant expressions, so the message stays in registers without relying on the driver to
// inline or unroll anything.
fn round(s: State, m: array<u32, 16>) -> State {
    var t = g(
        s,
        vec4<u32>(m[MSG_SCHEDULE[0][0]], m[MSG_SCHEDULE[0][2]], m[MSG_SCHEDULE[0][4]], m[MSG_SCHEDULE[0][6]]),
        vec4<u32>(m[MSG_SCHEDULE[0][1]], m[MSG_SCHEDULE[0][3]], m[MSG_SCHEDULE[0][5]], m[MSG_SCHEDULE[0][7]])
    );
    t = State(t.a, t.b.yzwx, t.c.zwxy, t.d.wxyz);
    t = g(
        t,
        vec4<u32>(m[MSG_SCHEDULE[0][8]], m[MSG_SCHEDULE[0][10]], m[MSG_SCHEDULE[0][12]], m[MSG_SCHEDULE[0][14]]),
        vec4<u32>(m[MSG_SCHEDULE[0][9]], m[MSG_SCHEDULE[0][11]], m[MSG_SCHEDULE[0][13]], m[MSG_SCHEDULE[0][15]])
    );
    return State(t.a, t.b.wxyz, t.c.zwxy, t.d.yzwx);
}

// BLAKE3's message permutation: schedule row 1 is the permutation applied once.
fn permute(m: array<u32, 16>) -> array<u32, 16> {
    return array<u32, 16>(
        m[MSG_SCHEDULE[1][0]], m[MSG_SCHEDULE[1][1]], m[MSG_SCHEDULE[1][2]], m[MSG_SCHEDULE[1][3]],
        m[MSG_SCHEDULE[1][4]], m[MSG_SCHEDULE[1][5]], m[MSG_SCHEDULE[1][6]], m[MSG_SCHEDULE[1][7]],
        m[MSG_SCHEDULE[1][8]], m[MSG_SCHEDULE[1][9]], m[MSG_SCHEDULE[1][10]], m[MSG_SCHEDULE[1][11]],
        m[MSG_SCHEDULE[1][12]], m[MSG_SCHEDULE[1][13]], m[MSG_SCHEDULE[1][14]], m[MSG_SCHEDULE[1][15]]
    );
}

// The state after the seven rounds (before the feed-forward).
fn compress(h0: vec4<u32>, h1: vec4<u32>, m0: array<u32, 16>, counter_lo: u32, counter_hi: u32,
            block_len: u32, flags: u32) -> State {
    var s = State(h0, h1, vec4<u32>(IV0, IV1, IV2, IV3),
                  vec4<u32>(counter_lo, counter_hi, block_len, flags));
    var m = m0;
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    m = permute(m);
    s = round(s, m);
    return s;
}

fn words(q0: vec4<u32>, q1: vec4<u32>, q2: vec4<u32>, q3: vec4<u32>) -> array<u32, 16> {
    return array<u32, 16>(q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w,
                          q2.x, q2.y, q2.z, q2.w, q3.x, q3.y, q3.z, q3.w);
}

// ---------------------------------------------------------------------------------------------
// The workgroup's tree.

fn store_cv(i: u32, h0: vec4<u32>, h1: vec4<u32>) {
    wlo[i] = h0;
    whi[i] = h1;
}

fn load_lo(i: u32) -> vec4<u32> {
    return wlo[i];
}
fn load_hi(i: u32) -> vec4<u32> {
    return whi[i];
}

// Reduces the r items in wlo/whi (r = G = group_items() for every workgroup but perhaps the last) by
// L = params.levels levels and writes out what they form: the r >> L nodes of level L into
// dst[wg * (G >> L) ..] (the next pass's items; a full workgroup writes G >> L of them), and
// for each set bit j < L of r the complete subtree of 2^j items that the ragged last workgroup
// has left over, as a piece. In the last pass (L = LOG_WG + 1: one workgroup, r <= WG) every set
// bit of r, WG's included, is a piece and nothing goes to dst. Reducing fewer than LOG_WG levels
// in the chunk pass leaves the sparse top levels (16, 8, 4, 2, 1 busy invocations between
// barriers) to the next, much smaller pass. Must be reached in uniform control flow (r, wg and
// params are uniform).
fn reduce_workgroup(lid: u32, wg: u32, r: u32) {
    let levels = params.levels;
    workgroupBarrier();
    for (var j = 0u; j <= LOG_WG; j = j + 1u) {
        // Here slot k << j holds node k of level j (subtrees of 2^j items) for k < r >> j.
        if (j == levels) {
            if (lid < (r >> j)) {
                let node = lid << j;
                let at = wg * (group_items() >> j) + lid;
                dst[2u * at] = load_lo(node);
                dst[2u * at + 1u] = load_hi(node);
            }
            break;
        }
        if (lid == 0u && ((r >> j) & 1u) == 1u) {
            let node = ((r >> j) - 1u) << j;
            let slot = params.piece_slot + j;
            pieces[2u * slot] = load_lo(node);
            pieces[2u * slot + 1u] = load_hi(node);
        }
        if (j < LOG_WG) {
            if (lid < (r >> (j + 1u))) {
                let left = (2u * lid) << j;
                let right = left + (1u << j);
                let l0 = load_lo(left);
                let l1 = load_hi(left);
                let r0 = load_lo(right);
                let r1 = load_hi(right);
                let s = compress(params.key_lo, params.key_hi, words(l0, l1, r0, r1), 0u, 0u,
                                 BLOCK_LEN, params.flags | PARENT);
                store_cv(left, s.a ^ s.c, s.b ^ s.d);
            }
            workgroupBarrier();
        }
    }
}

// Items each workgroup of this pass takes.
fn group_items() -> u32 {
    return WG >> params.group_shift;
}

// Items of this pass in workgroup wg (group_items(), or fewer for the ragged last one).
fn items_in(wg: u32) -> u32 {
    return min(group_items(), params.n_items - wg * group_items());
}

// The 64-bit counter of chunk i of the segment, as (low, high).
fn counter_of(i: u32) -> vec2<u32> {
    let lo = params.counter_lo + i;
    return vec2<u32>(lo, params.counter_hi + select(0u, 1u, lo < params.counter_lo));
}

fn block_flags(b: u32) -> u32 {
    var f = params.flags;
    if (b == 0u) {
        f = f | CHUNK_START;
    }
    if (b == 15u) {
        f = f | CHUNK_END;
    }
    return f;
}

// A device-resident input's last chunk (partial or whole), where the host asks for it: the
// params.src_word 16-byte words that follow the pass's chunks in `src` (bytes past the input's end
// included, which the host ignores), copied by workgroup 0 of the last segment's chunk pass to
// the room after the segment's PIECE_SLOTS pieces, which the host reads back with them. Done here
// rather than by copy_tail saves a bind group and a dispatch per call.
fn copy_last_chunk(wg: u32, lid: u32) {
    if (wg == 0u && lid < params.src_word) {
        pieces[2u * PIECE_SLOTS + lid] = src[params.n_items * 64u + lid];
    }
}

// ---------------------------------------------------------------------------------------------
// Entry points.

// Chunk CVs with direct loads: each invocation reads its own chunk, 16 bytes at a time, the
// next block's four loads issued before this block's rounds so that their latency hides behind
// the compression (faster passes: docs/performance.md). In bounds: the host binds exactly
// n_items * 1024 bytes, and only invocations with chunk < n_items load.
@compute @workgroup_size(256)
fn chunk_pass(@builtin(local_invocation_index) lid: u32,
              @builtin(workgroup_id) wid: vec3<u32>) {
    let wg = wid.x;
    copy_last_chunk(wg, lid);
    let r = items_in(wg);
    let chunk = wg * group_items() + lid;
    if (lid < r) {
        let ctr = counter_of(chunk);
        var h0 = params.key_lo;
        var h1 = params.key_hi;
        let base = chunk * 64u;
        var n0 = src[base];
        var n1 = src[base + 1u];
        var n2 = src[base + 2u];
        var n3 = src[base + 3u];
        for (var b = 0u; b < 16u; b = b + 1u) {
            let m = words(n0, n1, n2, n3);
            if (b < 15u) {
                let q = base + b * 4u + 4u;
                n0 = src[q];
                n1 = src[q + 1u];
                n2 = src[q + 2u];
                n3 = src[q + 3u];
            }
            let s = compress(h0, h1, m, ctr.x, ctr.y, BLOCK_LEN, block_flags(b));
            h0 = s.a ^ s.c;
            h1 = s.b ^ s.d;
        }
        store_cv(lid, h0, h1);
    }
    reduce_workgroup(lid, wg, r);
}

// Chunk CVs with loads staged through workgroup memory: for each block, the workgroup loads
// block b of all its chunks (neighbouring invocations read neighbouring 16-byte words), then
// each invocation takes its own block from `stage`.
@compute @workgroup_size(256)
fn chunk_pass_staged(@builtin(local_invocation_index) lid: u32,
                     @builtin(workgroup_id) wid: vec3<u32>) {
    let wg = wid.x;
    copy_last_chunk(wg, lid);
    let r = items_in(wg);
    let chunk = wg * group_items() + lid;
    let ctr = counter_of(chunk);
    var h0 = params.key_lo;
    var h1 = params.key_hi;
    for (var b = 0u; b < 16u; b = b + 1u) {
        for (var k = 0u; k < 4u; k = k + 1u) {
            let i = k * WG + lid;
            let c = i >> 2u;
            let part = i & 3u;
            if (c < r) {
                let q = src[(wg * group_items() + c) * 64u + b * 4u + part];
                stage[(part * 4u + 0u) * STAGE_ROW + c] = q.x;
                stage[(part * 4u + 1u) * STAGE_ROW + c] = q.y;
                stage[(part * 4u + 2u) * STAGE_ROW + c] = q.z;
                stage[(part * 4u + 3u) * STAGE_ROW + c] = q.w;
            }
        }
        workgroupBarrier();
        let m = array<u32, 16>(
            stage[0u * STAGE_ROW + lid], stage[1u * STAGE_ROW + lid],
            stage[2u * STAGE_ROW + lid], stage[3u * STAGE_ROW + lid],
            stage[4u * STAGE_ROW + lid], stage[5u * STAGE_ROW + lid],
            stage[6u * STAGE_ROW + lid], stage[7u * STAGE_ROW + lid],
            stage[8u * STAGE_ROW + lid], stage[9u * STAGE_ROW + lid],
            stage[10u * STAGE_ROW + lid], stage[11u * STAGE_ROW + lid],
            stage[12u * STAGE_ROW + lid], stage[13u * STAGE_ROW + lid],
            stage[14u * STAGE_ROW + lid], stage[15u * STAGE_ROW + lid]
        );
        workgroupBarrier();
        let s = compress(h0, h1, m, ctr.x, ctr.y, BLOCK_LEN, block_flags(b));
        h0 = s.a ^ s.c;
        h1 = s.b ^ s.d;
    }
    if (lid < r) {
        store_cv(lid, h0, h1);
    }
    reduce_workgroup(lid, wg, r);
}

// Parent levels: the CVs of the previous pass (two vec4 each) reduced WG at a time.
@compute @workgroup_size(256)
fn reduce_pass(@builtin(local_invocation_index) lid: u32,
               @builtin(workgroup_id) wid: vec3<u32>) {
    let wg = wid.x;
    let r = items_in(wg);
    let i = wg * group_items() + lid;
    if (lid < r) {
        store_cv(lid, src[2u * i], src[2u * i + 1u]);
    }
    reduce_workgroup(lid, wg, r);
}

// Each 64-byte block as a whole one-block message: its BLAKE3 hash (ROOT, counter 0).
@compute @workgroup_size(256)
fn hash_blocks(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < params.n_items) {
        let q = i * 4u;
        let m = words(src[q], src[q + 1u], src[q + 2u], src[q + 3u]);
        let s = compress(vec4<u32>(IV0, IV1, IV2, IV3), vec4<u32>(IV4, IV5, IV6, IV7), m, 0u, 0u,
                         BLOCK_LEN, CHUNK_START | CHUNK_END | ROOT);
        dst[2u * i] = s.a ^ s.c;
        dst[2u * i + 1u] = s.b ^ s.d;
    }
}

// Copies the last chunk of a device-resident input (n_items words) out of the caller's buffer
// into ours, so the caller's buffer needs no COPY_SRC usage: for inputs with no full chunk before
// it, or whose buffer ends before the chunk pass could copy it in whole 16-byte words
// (`copy_last_chunk`).
@compute @workgroup_size(256)
fn copy_tail(@builtin(local_invocation_index) lid: u32) {
    if (lid < params.n_items) {
        let q = lid >> 2u;
        let w = lid & 3u;
        // dst is vec4-typed: gather four words per vec4, written by the vec4's first word owner.
        if (w == 0u) {
            var v = vec4<u32>(0u);
            v.x = tail_src[lid];
            if (lid + 1u < params.n_items) {
                v.y = tail_src[lid + 1u];
            }
            if (lid + 2u < params.n_items) {
                v.z = tail_src[lid + 2u];
            }
            if (lid + 3u < params.n_items) {
                v.w = tail_src[lid + 3u];
            }
            dst[q] = v;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Binary Merkle trees of 32-byte nodes (src/api/merkle.rs): a parent is the plain BLAKE3 hash of
// left || right, one block with CHUNK_START | CHUNK_END | ROOT, counter 0, the IV as key (the
// flags come from the host: a bao tree's parents take PARENT, see `bao_place`).
//
// `merkle_pass`: a workgroup takes 2 * WG consecutive nodes of a level (its first node a multiple
// of 2 * WG) and reduces them by `levels` (1 to LOG_WG + 1) levels: the first from global memory
// into registers (two nodes per invocation), the others in workgroup memory, where node k of the
// workgroup's level L lives at slot k << (L - 1) (the reduction of `reduce_workgroup`: each
// parent overwrites its left child, which only its own invocation reads). Only the workgroup
// holding the level's last node can have an odd count: its last node is carried up unchanged,
// and it already sits in the slot of node (count - 1) / 2 of the next level. Every other
// workgroup has an even count at each level down to one node, so this is exactly the carry rule
// of `merkle::reduce`. With `keep`, each level's hashed nodes go to `pieces` (bound to the
// caller's inner-node buffer here) at the level's start plus the node's index: the layout of
// `merkle::level_sizes`.

struct MerkleParams {
    // Nodes of the level in this dispatch's `src` binding.
    n_local: u32,
    // Nodes of the whole level.
    n_total: u32,
    // Index in the whole level of this dispatch's first workgroup.
    group_base: u32,
    // Workgroups of this dispatch (the 2D grid can have a few more).
    groups: u32,
    // Levels to reduce (1 to LOG_WG + 1).
    levels: u32,
    // Nonzero: write every hashed node to `pieces` (the inner-node buffer).
    keep: u32,
    // Node index in `pieces` where the first level made here starts.
    inner_at: u32,
    // A parent's flags: CHUNK_START | CHUNK_END | ROOT for the merkle module's trees (the plain
    // BLAKE3 hash of the pair), PARENT for a bao tree's parents.
    flags: u32,
}
@group(0) @binding(5) var<uniform> mparams: MerkleParams;

fn merkle_parent(l0: vec4<u32>, l1: vec4<u32>, r0: vec4<u32>, r1: vec4<u32>) -> State {
    return compress(vec4<u32>(IV0, IV1, IV2, IV3), vec4<u32>(IV4, IV5, IV6, IV7), words(l0, l1, r0, r1),
                    0u, 0u, BLOCK_LEN, mparams.flags);
}

fn keep_node(i: u32, h0: vec4<u32>, h1: vec4<u32>) {
    pieces[2u * i] = h0;
    pieces[2u * i + 1u] = h1;
}

// A level as a Merkle workgroup walks up: its `count` nodes in this workgroup, the whole level's
// `total`, and the inner node where the next level made starts (`at`).
struct MerkleLevel {
    count: u32,
    total: u32,
    at: u32,
}

// The next level: an odd last node is carried up, and the level made here (total / 2 hashed
// nodes) comes before it among the inner nodes.
fn merkle_up(l: MerkleLevel) -> MerkleLevel {
    return MerkleLevel((l.count + 1u) >> 1u, (l.total + 1u) >> 1u, l.at + (l.total >> 1u));
}

// A CV as two vec4 halves.
struct Cv2 {
    lo: vec4<u32>,
    hi: vec4<u32>,
}

// The rest of a Merkle workgroup's levels, `done + 1` to `levels`, through workgroup memory, from
// level `done` (`l`; node i in invocation i's `h_in`); then the last level made goes to `dst`.
// Workgroup g takes `group_nodes` nodes. Must be reached in uniform control flow.
fn merkle_finish(lid: u32, g: u32, group_nodes: u32, done: u32, l_in: MerkleLevel, keep: bool, h_in: Cv2) {
    let gfirst = (mparams.group_base + g) * group_nodes;
    var l = l_in;
    var h = h_in;
    let levels = mparams.levels;
    if (levels > done) {
        if (lid < l.count) {
            store_cv(lid, h.lo, h.hi);
        }
        workgroupBarrier();
        for (var level = done + 1u; level <= levels; level = level + 1u) {
            let stride = 1u << (level - done - 1u);
            if (lid < (l.count >> 1u)) {
                let left = (2u * lid) * stride;
                let right = left + stride;
                let s = merkle_parent(load_lo(left), load_hi(left), load_lo(right), load_hi(right));
                h = Cv2(s.a ^ s.c, s.b ^ s.d);
                store_cv(left, h.lo, h.hi);
                if (keep) {
                    keep_node(l.at + (gfirst >> level) + lid, h.lo, h.hi);
                }
            }
            l = merkle_up(l);
            workgroupBarrier();
        }
        if (lid < l.count) {
            let slot = lid << (levels - done);
            h = Cv2(load_lo(slot), load_hi(slot));
        }
    }
    if (lid < l.count) {
        let o = ((mparams.group_base + g) * (group_nodes >> levels) + lid) * 2u;
        dst[o] = h.lo;
        dst[o + 1u] = h.hi;
    }
}

// A Merkle workgroup's place: its index g in the dispatch, the index in the dispatch's binding
// and in the whole level of its first node, and the level it starts from (its node count:
// group_nodes, or fewer for the dispatch's last).
struct MerkleGroup {
    g: u32,
    first: u32,
    gfirst: u32,
    level: MerkleLevel,
}

fn merkle_group(wid: vec3<u32>, nwg: vec3<u32>, group_nodes: u32) -> MerkleGroup {
    let g = wid.y * nwg.x + wid.x;
    let first = g * group_nodes;
    let count = min(group_nodes, mparams.n_local - min(first, mparams.n_local));
    return MerkleGroup(g, first, (mparams.group_base + g) * group_nodes,
                       MerkleLevel(count, mparams.n_total, mparams.inner_at));
}

// Node j of the first level a workgroup makes from its `count` nodes (of src, from `first`): the
// parent of nodes 2j and 2j + 1, kept at inner node `keep_at` with `keep`; node 2j itself where it
// is the odd last one; zeros past the end.
fn merkle_first_level(first: u32, j: u32, count: u32, keep: bool, keep_at: u32) -> Cv2 {
    let q = 2u * (first + 2u * j);
    let pairs = count >> 1u;
    var n = Cv2(vec4<u32>(0u), vec4<u32>(0u));
    if (j < pairs) {
        let s = merkle_parent(src[q], src[q + 1u], src[q + 2u], src[q + 3u]);
        n = Cv2(s.a ^ s.c, s.b ^ s.d);
        if (keep) {
            keep_node(keep_at, n.lo, n.hi);
        }
    } else if (j == pairs && (count & 1u) == 1u) {
        n = Cv2(src[q], src[q + 1u]);
    }
    return n;
}

@compute @workgroup_size(256)
fn merkle_pass(@builtin(local_invocation_index) lid: u32,
               @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let m = merkle_group(wid, nwg, 2u * WG);
    if (m.g >= mparams.groups) {
        return;
    }
    let keep = mparams.keep != 0u;
    // Level 1: a pair from global memory, in registers.
    let n = merkle_first_level(m.first, lid, m.level.count, keep, m.level.at + (m.gfirst >> 1u) + lid);
    merkle_finish(lid, m.g, 2u * WG, 1u, merkle_up(m.level), keep, n);
}

// The bulk Merkle levels, four nodes an invocation: the invocation hashes its two pairs (two
// independent compressions) and their parent in registers, and only the levels above that go
// through workgroup memory and its barriers. A workgroup takes 4 * WG nodes; `levels` is at
// least 2. Same carry rule, inner-node layout and output as `merkle_pass`.
@compute @workgroup_size(256)
fn merkle_pass4(@builtin(local_invocation_index) lid: u32,
                @builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    let m = merkle_group(wid, nwg, 4u * WG);
    if (m.g >= mparams.groups) {
        return;
    }
    let keep = mparams.keep != 0u;
    // Level 1: nodes 2 lid and 2 lid + 1, from nodes 4 lid .. 4 lid + 3.
    let at1 = m.level.at + (m.gfirst >> 1u) + 2u * lid;
    let a = merkle_first_level(m.first, 2u * lid, m.level.count, keep, at1);
    let b = merkle_first_level(m.first, 2u * lid + 1u, m.level.count, keep, at1 + 1u);
    let l1 = merkle_up(m.level);
    // Level 2, in registers: node lid from the two above, or the first of them carried up.
    var h = a;
    if (lid < (l1.count >> 1u)) {
        let s = merkle_parent(a.lo, a.hi, b.lo, b.hi);
        h = Cv2(s.a ^ s.c, s.b ^ s.d);
        if (keep) {
            keep_node(l1.at + (m.gfirst >> 2u) + lid, h.lo, h.hi);
        }
    }
    merkle_finish(lid, m.g, 4u * WG, 2u, merkle_up(l1), keep, h);
}

// ---------------------------------------------------------------------------------------------
// Many equal-length messages laid end to end (Backend::hash_many), read from `tail_src` (bound as
// words: messages need not start on a word boundary). `many_chunks`: one invocation per chunk of
// each message; a message of one chunk or less gets its hash (ROOT), a longer one the chaining
// value of each chunk, which the host merges in BLAKE3's tree order.

struct ManyParams {
    key_lo: vec4<u32>,
    key_hi: vec4<u32>,
    // Bytes per message.
    msg_len: u32,
    // Items (chunks of messages) in this dispatch.
    n_items: u32,
    // Chunks per message (1 for messages of at most one chunk, 0 bytes included).
    chunks: u32,
    // Mode flags.
    flags: u32,
    // Words in the `tail_src` binding (reads at or past it give 0).
    n_words: u32,
    // Items per row of the 2D grid (workgroups in x times WG).
    row_items: u32,
    pad0: u32,
    pad1: u32,
}
@group(0) @binding(6) var<uniform> nparams: ManyParams;

fn data_word(w: u32) -> u32 {
    if (w < nparams.n_words) {
        return tail_src[w];
    }
    return 0u;
}

// The four bytes at byte `b` (any alignment), little-endian, bytes at or past `end` as zero.
fn load4(b: u32, end: u32) -> u32 {
    if (b >= end) {
        return 0u;
    }
    let q = b >> 2u;
    let sh = (b & 3u) * 8u;
    var w = data_word(q);
    if (sh != 0u) {
        w = (w >> sh) | (data_word(q + 1u) << (32u - sh));
    }
    let avail = end - b;
    if (avail < 4u) {
        w = w & ((1u << (avail * 8u)) - 1u);
    }
    return w;
}

@compute @workgroup_size(256)
fn many_chunks(@builtin(local_invocation_index) lid: u32,
               @builtin(workgroup_id) wid: vec3<u32>) {
    let item = wid.y * nparams.row_items + wid.x * WG + lid;
    if (item >= nparams.n_items) {
        return;
    }
    var msg = item;
    var c = 0u;
    if (nparams.chunks > 1u) {
        msg = item / nparams.chunks;
        c = item - msg * nparams.chunks;
    }
    let start = msg * nparams.msg_len + c * CHUNK_LEN;
    let chunk_len = min(CHUNK_LEN, nparams.msg_len - c * CHUNK_LEN);
    let end = start + chunk_len;
    let blocks = max(1u, (chunk_len + BLOCK_LEN - 1u) / BLOCK_LEN);
    var end_flags = CHUNK_END;
    if (nparams.chunks == 1u) {
        end_flags = CHUNK_END | ROOT;
    }
    var h0 = nparams.key_lo;
    var h1 = nparams.key_hi;
    for (var b = 0u; b < blocks; b = b + 1u) {
        let at = start + b * BLOCK_LEN;
        var m: array<u32, 16>;
        for (var k = 0u; k < 16u; k = k + 1u) {
            m[k] = load4(at + 4u * k, end);
        }
        var f = nparams.flags;
        if (b == 0u) {
            f = f | CHUNK_START;
        }
        if (b + 1u == blocks) {
            f = f | end_flags;
        }
        let s = compress(h0, h1, m, c, 0u, min(BLOCK_LEN, chunk_len - b * BLOCK_LEN), f);
        h0 = s.a ^ s.c;
        h1 = s.b ^ s.d;
    }
    dst[2u * item] = h0;
    dst[2u * item + 1u] = h1;
}

// `many_vec4`: `many_chunks` for messages whose length is a nonzero multiple of 16 bytes (64-byte
// records, 1 KiB, ...), read from `src` (bound at a message boundary, so every message and chunk
// starts on a 16-byte boundary): each block is at most four whole vec4 loads with constant
// indices, no byte shifting and no per-word bounds test. A 64-byte message is one 64-byte load
// run per invocation, its neighbours' runs adjacent. Same outputs as `many_chunks`. In bounds:
// invocation `item` reads below (msg * msg_len + c * CHUNK_LEN + chunk_len) / 16 <= the bound
// messages' bytes / 16.
@compute @workgroup_size(256)
fn many_vec4(@builtin(local_invocation_index) lid: u32,
             @builtin(workgroup_id) wid: vec3<u32>) {
    let item = wid.y * nparams.row_items + wid.x * WG + lid;
    if (item >= nparams.n_items) {
        return;
    }
    var msg = item;
    var c = 0u;
    if (nparams.chunks > 1u) {
        msg = item / nparams.chunks;
        c = item - msg * nparams.chunks;
    }
    let start = (msg * nparams.msg_len + c * CHUNK_LEN) >> 4u;
    let chunk_len = min(CHUNK_LEN, nparams.msg_len - c * CHUNK_LEN);
    let blocks = (chunk_len + BLOCK_LEN - 1u) / BLOCK_LEN;
    var end_flags = CHUNK_END;
    if (nparams.chunks == 1u) {
        end_flags = CHUNK_END | ROOT;
    }
    var h0 = nparams.key_lo;
    var h1 = nparams.key_hi;
    for (var b = 0u; b < blocks; b = b + 1u) {
        let q = start + 4u * b;
        let len = min(BLOCK_LEN, chunk_len - b * BLOCK_LEN);
        var q0 = src[q];
        var q1 = vec4<u32>(0u);
        var q2 = vec4<u32>(0u);
        var q3 = vec4<u32>(0u);
        if (len == BLOCK_LEN) {
            q1 = src[q + 1u];
            q2 = src[q + 2u];
            q3 = src[q + 3u];
        } else {
            if (len > 16u) {
                q1 = src[q + 1u];
            }
            if (len > 32u) {
                q2 = src[q + 2u];
            }
        }
        var f = nparams.flags;
        if (b == 0u) {
            f = f | CHUNK_START;
        }
        if (b + 1u == blocks) {
            f = f | end_flags;
        }
        let s = compress(h0, h1, words(q0, q1, q2, q3), c, 0u, len, f);
        h0 = s.a ^ s.c;
        h1 = s.b ^ s.d;
    }
    dst[2u * item] = h0;
    dst[2u * item + 1u] = h1;
}

// ---------------------------------------------------------------------------------------------
// Bao outboards (src/backends/gpu/bao.rs; the same math on the host, with its tests, in
// src/tree/bao_shape.rs). The Merkle passes over the n chunk groups' chaining values (`src`),
// with PARENT as flags, keep every parent of BLAKE3's tree over the groups as an inner node
// (`pieces`): node j of level h covers groups [j << h, min((j + 1) << h, n)) and is stored where
// it has a right child. `bao_place` writes each stored node's two children (64 bytes) at its index
// in a pre-order or post-order outboard (`dst`), one invocation per inner node, and the root's two
// children after the n - 1 inner nodes too, for the host. `bao_fold` makes a group's chaining
// value that no capped pass wrote (a partial last group, or a full group alone).

struct BaoParams {
    // Chunk groups.
    n: u32,
    // 0: pre-order; 1: post-order.
    order: u32,
    // bao_fold: the group whose chaining value it writes (node `group` of `dst`), the full chunks
    // whose pieces it folds (`src`: slot b for each set bit b), the bytes of the partial chunk
    // after them (`tail_src`, from word 0; 0: none) and that chunk's 64-bit counter.
    group: u32,
    chunks: u32,
    partial_len: u32,
    counter_lo: u32,
    counter_hi: u32,
    pad0: u32,
}
@group(0) @binding(7) var<uniform> bparams: BaoParams;

// Word w of bao_fold's partial chunk, the bytes past its end as zeros.
fn partial_word(w: u32) -> u32 {
    let at = 4u * w;
    if (at >= bparams.partial_len) {
        return 0u;
    }
    var x = tail_src[w];
    let left = bparams.partial_len - at;
    if (left < 4u) {
        x = x & ((1u << (left * 8u)) - 1u);
    }
    return x;
}

// A chunk group's chaining value from its first `chunks` full chunks (their pieces) and its
// partial last chunk: merged right to left, as BLAKE3's left-heavy tree pairs them, and never a
// root. One invocation.
@compute @workgroup_size(1)
fn bao_fold() {
    let iv_lo = vec4<u32>(IV0, IV1, IV2, IV3);
    let iv_hi = vec4<u32>(IV4, IV5, IV6, IV7);
    var h = Cv2(iv_lo, iv_hi);
    var have = bparams.partial_len > 0u;
    if (have) {
        let blocks = (bparams.partial_len + BLOCK_LEN - 1u) / BLOCK_LEN;
        for (var b = 0u; b < blocks; b = b + 1u) {
            var m: array<u32, 16>;
            for (var k = 0u; k < 16u; k = k + 1u) {
                m[k] = partial_word(16u * b + k);
            }
            var f = 0u;
            if (b == 0u) {
                f = f | CHUNK_START;
            }
            if (b + 1u == blocks) {
                f = f | CHUNK_END;
            }
            let len = min(BLOCK_LEN, bparams.partial_len - b * BLOCK_LEN);
            let s = compress(h.lo, h.hi, m, bparams.counter_lo, bparams.counter_hi, len, f);
            h = Cv2(s.a ^ s.c, s.b ^ s.d);
        }
    }
    for (var b = 0u; b < 32u; b = b + 1u) {
        if (((bparams.chunks >> b) & 1u) == 0u) {
            continue;
        }
        let piece = Cv2(src[2u * b], src[2u * b + 1u]);
        if (have) {
            let s = compress(iv_lo, iv_hi, words(piece.lo, piece.hi, h.lo, h.hi), 0u, 0u, BLOCK_LEN, PARENT);
            h = Cv2(s.a ^ s.c, s.b ^ s.d);
        } else {
            h = piece;
            have = true;
        }
    }
    dst[2u * bparams.group] = h.lo;
    dst[2u * bparams.group + 1u] = h.hi;
}

// Index in `pieces` of the first node of level `level` (1 or more) over n groups.
fn level_start(n_in: u32, level: u32) -> u32 {
    var n = n_in;
    var at = 0u;
    for (var h = 1u; h < level; h = h + 1u) {
        at = at + (n >> 1u);
        n = (n + 1u) >> 1u;
    }
    return at;
}

// The chaining value of the node over `count` groups from group `first`: the group's, or the
// inner node of level ceil(log2 count), where it was hashed.
fn kept_cv(n: u32, first: u32, count: u32) -> Cv2 {
    if (count == 1u) {
        return Cv2(src[2u * first], src[2u * first + 1u]);
    }
    let level = 32u - countLeadingZeros(count - 1u);
    let at = level_start(n, level) + (first >> level);
    return Cv2(pieces[2u * at], pieces[2u * at + 1u]);
}

@compute @workgroup_size(256)
fn bao_place(@builtin(local_invocation_index) lid: u32,
             @builtin(workgroup_id) wid: vec3<u32>,
             @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = bparams.n;
    let i = (wid.y * nwg.x + wid.x) * WG + lid;
    if (i + 1u >= n) {
        return;
    }
    // Inner node i: level `level`, index i - at in it.
    var at = 0u;
    var count = n;
    var level = 1u;
    while (i >= at + (count >> 1u)) {
        at = at + (count >> 1u);
        count = (count + 1u) >> 1u;
        level = level + 1u;
    }
    let s = (i - at) << level; // its first group
    let half = 1u << (level - 1u);
    // The parents before its subtree: one complete subtree per set bit of s.
    var index = s - countOneBits(s);
    if (bparams.order == 0u) {
        // Pre-order: and its ancestors, the levels above whose node over s has a right child.
        let top = 32u - countLeadingZeros(n - 1u);
        for (var h = level + 1u; h <= top; h = h + 1u) {
            if (((s >> h) << h) + (1u << (h - 1u)) < n) {
                index = index + 1u;
            }
        }
    } else {
        // Post-order: and the other parents of its own subtree.
        index = index + min(2u * half, n - s) - 2u;
    }
    let l = kept_cv(n, s, half);
    let r = kept_cv(n, s + half, min(half, n - s - half));
    dst[4u * index] = l.lo;
    dst[4u * index + 1u] = l.hi;
    dst[4u * index + 2u] = r.lo;
    dst[4u * index + 3u] = r.hi;
    // The root, the last inner node: its pair after the inner nodes too (read by nothing here).
    if (i + 2u == n) {
        let at = 2u * (n - 1u);
        pieces[at] = l.lo;
        pieces[at + 1u] = l.hi;
        pieces[at + 2u] = r.lo;
        pieces[at + 3u] = r.hi;
    }
}
