/* RDMA write/read and atomics: the initiator checks the rkey in the fabric
 * table and moves the bytes itself with process_vm_writev/readv (CMA), in
 * order behind the QP's earlier WRs. */
#include "send_ops.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <sys/uio.h>
#include <unistd.h>

namespace verbs_emu {

namespace {

enum class cma_result { ok, fault, peer_gone };

/* Moves `length` bytes between `local` pieces and [remote, +length) of
 * `pid`, resuming after partial transfers. */
cma_result cma_transfer(pid_t pid, const gather_list &local, uint64_t remote, uint64_t length,
                        bool write)
{
    uint64_t done = 0;
    while (done < length) {
        /* the local pieces still to go */
        std::vector<struct iovec> pieces;
        uint64_t skip = done;
        for (const struct iovec &piece : local) {
            if (skip >= piece.iov_len) {
                skip -= piece.iov_len;
                continue;
            }
            pieces.push_back({static_cast<uint8_t *>(piece.iov_base) + skip, piece.iov_len - skip});
            skip = 0;
        }
        struct iovec far = {reinterpret_cast<void *>(remote + done), size_t(length - done)};
        ssize_t n = write ? process_vm_writev(pid, pieces.data(), pieces.size(), &far, 1, 0) :
                            process_vm_readv(pid, pieces.data(), pieces.size(), &far, 1, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n < 0 && errno == ESRCH) {
                return cma_result::peer_gone;
            }
            if (n < 0 && errno == EPERM) {
                static bool told = false;
                if (!told) {
                    told = true;
                    std::fprintf(stderr,
                                 "verbs_emu: process_vm_%sv refused (EPERM): "
                                 "ptrace restrictions block CMA\n",
                                 write ? "write" : "read");
                }
            }
            return cma_result::fault;
        }
        done += uint64_t(n);
    }
    return cma_result::ok;
}

/* Where [remote_addr, +length) of key `rkey` lives in the target process,
 * if the key is valid there, grants `access` and covers the range. */
bool resolve_remote(uint32_t rkey, uint64_t remote_addr, uint64_t length, uint32_t access,
                    pid_t target, uint64_t *host)
{
    mr_view mr;
    if (!fabric_lookup_mr(rkey, &mr) || mr.owner != target || (mr.access & access) != access ||
        mr.iova + mr.length < mr.iova || remote_addr < mr.iova ||
        remote_addr + length < remote_addr || remote_addr + length > mr.iova + mr.length) {
        return false;
    }
    *host = mr.addr + (remote_addr - mr.iova);
    return true;
}

/* A CMA failure is the peer's death if it is dead, else bad remote memory. */
enum ibv_wc_status cma_failure_status(cma_result result, outbound_ring &ring)
{
    if (result == cma_result::peer_gone || !outbound_owner_alive(ring)) {
        return IBV_WC_RETRY_EXC_ERR;
    }
    return IBV_WC_REM_ACCESS_ERR;
}

} // namespace

exec_result rdma_write(emu_qp *qp, const send_wqe &wqe, const qp_view &peer, outbound_ring &ring,
                       bool with_imm)
{
    uint64_t length = send_length(wqe);
    if (length > kMaxMessageBytes) {
        return exec_error(IBV_WC_LOC_LEN_ERR);
    }
    gather_list local;
    if (!gather_send_data(qp, wqe, &local)) {
        return exec_error(IBV_WC_LOC_PROT_ERR);
    }
    /* the immediate needs a ring record: make sure it fits before writing
     * (a single producer: the room can only grow until we use it) */
    if (with_imm && !ring_has_room(ring, 0)) {
        room_wait wait = wait_for_room(qp, ring, 0);
        if (wait == room_wait::peer_dead) {
            return exec_error(IBV_WC_RETRY_EXC_ERR);
        }
        if (wait == room_wait::stalled) {
            return exec_stall();
        }
    }
    if (length > 0) {
        uint64_t host = 0;
        if (!(peer.access & IBV_ACCESS_REMOTE_WRITE) ||
            !resolve_remote(wqe.rkey, wqe.remote_addr, length, IBV_ACCESS_REMOTE_WRITE,
                            peer.id.owner, &host)) {
            return exec_error(IBV_WC_REM_ACCESS_ERR);
        }
        cma_result moved = cma_transfer(peer.id.owner, local, host, length, true);
        if (moved != cma_result::ok) {
            return exec_error(cma_failure_status(moved, ring));
        }
    }
    if (with_imm) {
        record_header record;
        std::memset(&record, 0, sizeof(record));
        record.opcode         = kRecordWriteImm;
        record.flags          = kRecordFirst | kRecordLast | kRecordHasImm;
        record.src_qpn        = qp->ibv.qp_num;
        record.imm            = wqe.imm;
        record.message_length = length; /* reported as the receive's byte_len */
        record.src_lid        = port_lid(qp->ctx->cfg, qp->ctx->device_index, qp->attr.port_num);
        record.src_pid        = getpid();
        size_t written        = 0;
        produce_status status = ring_produce(ring, record, gather_list(), 0, 0, 0, &written);
        if (status == produce_status::broken) {
            return exec_error(IBV_WC_RETRY_EXC_ERR);
        }
        if (status == produce_status::no_room) {
            return exec_stall(); /* someone else filled it; the write repeats */
        }
        ring_notify_owner(ring);
    }
    return exec_ok();
}

exec_result rdma_read(emu_qp *qp, const send_wqe &wqe, const qp_view &peer, outbound_ring &ring)
{
    uint64_t length = send_length(wqe);
    if (length > kMaxMessageBytes) {
        return exec_error(IBV_WC_LOC_LEN_ERR);
    }
    gather_list local;
    if (!resolve_local_sges(qp->pd, wqe.sges.data(), wqe.sges.size(), IBV_ACCESS_LOCAL_WRITE,
                            &local)) {
        return exec_error(IBV_WC_LOC_PROT_ERR);
    }
    if (length == 0) {
        return exec_ok(0);
    }
    uint64_t host = 0;
    if (!(peer.access & IBV_ACCESS_REMOTE_READ) ||
        !resolve_remote(wqe.rkey, wqe.remote_addr, length, IBV_ACCESS_REMOTE_READ, peer.id.owner,
                        &host)) {
        return exec_error(IBV_WC_REM_ACCESS_ERR);
    }
    cma_result moved = cma_transfer(peer.id.owner, local, host, length, false);
    if (moved != cma_result::ok) {
        return exec_error(cma_failure_status(moved, ring));
    }
    return exec_ok(uint32_t(length));
}

exec_result atomic_op(emu_qp *qp, const send_wqe &wqe, const qp_view &peer, outbound_ring &ring)
{
    gather_list result_buffer;
    if (!resolve_local_sges(qp->pd, wqe.sges.data(), wqe.sges.size(), IBV_ACCESS_LOCAL_WRITE,
                            &result_buffer) ||
        result_buffer.size() != 1) {
        return exec_error(IBV_WC_LOC_PROT_ERR);
    }
    if (wqe.remote_addr % 8 != 0) {
        return exec_error(IBV_WC_REM_INV_REQ_ERR);
    }
    uint64_t host = 0;
    if (!(peer.access & IBV_ACCESS_REMOTE_ATOMIC) ||
        !resolve_remote(wqe.rkey, wqe.remote_addr, 8, IBV_ACCESS_REMOTE_ATOMIC, peer.id.owner,
                        &host)) {
        return exec_error(IBV_WC_REM_ACCESS_ERR);
    }
    uint64_t original = 0;
    {
        /* IBV_ATOMIC_HCA: atomic against every other atomic of the HCA
         * (all processes of the machine), not against CPU stores */
        fabric_atomic_guard atomic;
        if (!atomic.locked()) {
            return exec_error(IBV_WC_REM_OP_ERR);
        }
        gather_list old_value = {{&original, sizeof(original)}};
        cma_result moved      = cma_transfer(peer.id.owner, old_value, host, 8, false);
        if (moved == cma_result::ok) {
            uint64_t updated = original;
            if (wqe.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
                updated = original + wqe.compare_add;
            } else if (original == wqe.compare_add) {
                updated = wqe.swap;
            }
            if (updated != original) {
                gather_list new_value = {{&updated, sizeof(updated)}};
                moved                 = cma_transfer(peer.id.owner, new_value, host, 8, true);
            }
        }
        if (moved != cma_result::ok) {
            return exec_error(cma_failure_status(moved, ring));
        }
    }
    std::memcpy(result_buffer[0].iov_base, &original, sizeof(original));
    return exec_ok(8);
}

} // namespace verbs_emu
