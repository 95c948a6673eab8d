/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport's counters as one table each (X-macro lists, in the order of
 * the stats dump): the counter structs (roce_tp.h, roce_srq_evq.h) and the dump
 * (roce_tp.c) are generated from them. A new counter is one line here, then
 * its ++ where it happens; the dump names it by its field name. Arrays of
 * counters (by reason, status, event type) stay in the structs and are
 * dumped by name tables between the lists.
 */
#ifndef VRDMA_ROCE_STATS_H
#define VRDMA_ROCE_STATS_H

/* "roce rx" line: before the parse drops (rx_parse[], by roce_rx_err). */
#define ROCE_TP_STATS_RX_FRAMES(X)                                             \
	X(rx_frames)        /* RoCE frames taken from the switch */            \
	X(rx_bytes)                                                            \
	X(rx_queue_full)    /* dropped: device queue full */

/* "roce rx" line, after the parse drops. */
#define ROCE_TP_STATS_RX(X)                                                    \
	X(rx_not_ours)      /* destination GID not ours (any more) */          \
	X(state_refused)    /* commands beyond the state-mem budget */         \
	X(rx_no_qp)         /* no QP with that QPN */                          \
	X(rx_qp_type)       /* opcode of another transport */                  \
	X(rx_qp_state)      /* QP not in a receiving state */                  \
	X(rx_pkey)          /* P_Key not the default */                        \
	X(rx_bad_src)       /* RC/UC: not from the QP's peer */                \
	X(rx_qkey)          /* UD: Q_Key mismatch */                           \
	X(rx_cnp)           /* congestion notifications */                     \
	X(rx_dup)           /* duplicate requests (re-acked) */                \
	X(rx_seq_err)       /* requests out of sequence */                     \
	X(rx_opcode_seq)    /* bad opcode sequence */                          \
	X(rx_len_err)       /* length errors */                                \
	X(rx_mtu)           /* payload above the path MTU */                   \
	X(rx_no_rwqe)       /* UD/UC: no receive WQE, dropped */               \
	X(rx_uc_dropped)    /* UC: packets of a broken message */              \
	X(rx_stale_resp)    /* responses for nothing outstanding */            \
	X(alive_expired)    /* READ responses without progress no longer     \
			     * holding the timer back (ROCE_TP_ALIVE_TIMEOUTS) */ \
	X(rx_bad_resp)      /* malformed responses */                          \
	X(rd_ahead)         /* READ responses placed beyond a gap */           \
	X(rd_not_kept)      /* ... not placed: beyond ROCE_TP_RD_WINDOW, or    \
			     * no memory for the bitmap */                    \
	X(rd_fills)         /* READ requests for a missing range */            \
	X(rx_arp)           /* ARP frames handled */                           \
	X(rx_nd)            /* ND frames handled */                            \
	X(rx_by_ref)        /* payloads placed from the sender's memory */     \
	X(rx_runs)          /* request runs received (roce_run.c) */           \
	X(rx_resp_runs)     /* READ response runs received */                 \
	X(rx_run_pkts)      /* ... packets they stood for */                   \
	X(rx_run_bulk)      /* ... pieces of them placed with one copy */      \
	X(rx_run_lost)      /* packets of a run whose payload was gone */     \
	X(rx_kept)          /* out-of-sequence request packets kept */       \
	X(rx_kept_used)     /* ... executed once the gap before them filled */ \
	X(rx_kept_freed)    /* ... freed unused (duplicates, reset, ERR) */    \
	X(rx_keep_full)     /* out-of-sequence frames not kept: no room */

/* "roce tx" line: transmit and the reliable connection. */
#define ROCE_TP_STATS_TX(X)                                                    \
	X(tx_frames)                                                           \
	X(tx_bytes)                                                            \
	X(tx_nobuf)         /* pkt_alloc failed */                             \
	X(tx_build_err)     /* roce_pkt_build failed (bug) */                  \
	X(tx_held)          /* refused by a busy receiver, kept */             \
	X(tx_queue_full)    /* dropped: held queue full */                     \
	X(tx_parked)        /* QP turns put off: receiver busy */              \
	X(tx_by_ref)        /* payloads left in our memory (one copy) */       \
	X(tx_runs)          /* frames standing for several packets */          \
	X(tx_run_pkts)      /* ... packets they stood for */                   \
	X(tx_run_msgs)      /* runs of single-packet messages: messages */     \
	X(acks_sent)                                                           \
	X(naks_sent)                                                           \
	X(rnr_naks_sent)                                                       \
	X(read_resp_sent)                                                      \
	X(acks_rcvd)                                                           \
	X(naks_rcvd)                                                           \
	X(rnr_naks_rcvd)                                                       \
	X(rewinds)          /* go-back-N restarts */                           \
	X(retransmits)      /* packets sent again */                           \
	X(timeouts)         /* retransmit timer expirations */                 \
	X(probes)           /* loss probes (roce_recover.c) */                 \
	X(timer_waits)      /* a probe/timeout not needed after one more poll */ \
	X(window_cuts)      /* send window halved: a loss that went back */    \
	X(dup_reads)        /* duplicate READs answered again */              \
	X(nak_holds)        /* sequence NAKs answered with the missing packets \
			     * only (roce_recover.c) */                      \
	X(hold_skips)       /* PSNs acknowledged beyond them: not sent again */ \
	X(hold_probes)      /* ... sent once more, unanswered */

/* "roce wr" line: before the completions by status (wc[]). */
#define ROCE_TP_STATS_WR_POPPED(X)                                             \
	X(send_wrs)         /* send WQEs popped */                             \
	X(recv_wrs)         /* receive WQEs popped */

/* "roce wr" line, after the completions: CQs, rings, neighbours, congestion
 * control. */
#define ROCE_TP_STATS_WR(X)                                                    \
	X(wr_bad_chain)     /* unreadable sq_req / rq_req */                   \
	X(cqe_written)                                                         \
	X(cqe_backlogged)   /* waited for a CQ buffer */                       \
	X(cq_bad_buffers)   /* CQ buffers shorter than 48 bytes */             \
	X(cq_overflows)     /* CQs that overflowed */                          \
	X(cqe_dropped)      /* completions of overflowed CQs */                \
	X(ring_errors)      /* broken rings */                                 \
	X(qp_errors)        /* QPs moved to ERR by the engine */               \
	X(neigh_requests)   /* ARP requests / NS sent */                       \
	X(neigh_replies)    /* ARP replies / NA sent */                        \
	X(neigh_resolved)                                                      \
	X(neigh_queued)                                                        \
	X(neigh_dropped)    /* frames dropped: queue full, failed */           \
	X(neigh_pinned)     /* sent to a local device's pinned MAC */          \
	X(neigh_ignored)    /* ARP/ND not allowed to change an entry */        \
	X(neigh_failed)     /* rounds of requests unanswered */                \
	X(neigh_refreshes)  /* expired entries asked again */                  \
	X(neigh_waits)      /* requester turns that waited for a MAC */        \
	X(rx_ce)            /* packets that arrived CE-marked */               \
	X(rx_ce_marked)     /* ... marked here: receive queue above            \
			     * cc.mark_qlen */                                 \
	X(cnp_sent)                                                            \
	X(cc_decreases)     /* reaction point rate changes */                  \
	X(cc_increases)                                                        \
	X(cc_paced)         /* requester turns stopped by the pacer */

/* "roce ext wr" line, after the extension completions (wc_ext[]): atomics,
 * memory management, windows. */
#define ROCE_TP_STATS_EXT_WR(X)                                                \
	X(atomics_sent)          /* atomic requests sent (first time) */       \
	X(atomic_acks_rcvd)      /* ATOMIC ACKNOWLEDGEs used */                \
	X(atomics_executed)      /* responder: executed once each */           \
	X(atomic_dups_answered)  /* duplicates answered from the saved result */ \
	X(atomic_dups_dropped)   /* duplicates whose resource was recycled */  \
	X(atomic_errors)         /* responder: NAKed atomics */                \
	X(local_ops)             /* REG_MR / LOCAL_INV / BIND_MW executed */   \
	X(local_op_errors)       /* ... that failed */                         \
	X(remote_inv_ok)         /* SEND_WITH_INV: key invalidated */          \
	X(remote_inv_failed)     /* ... could not be: NAK Invalid Request */   \
	X(comm_est)              /* COMM_EST events raised */                  \
	X(stale_replays)         /* answers to old duplicates cancelled by a   \
				  * new READ / atomic */

/* "roce sched" line (docs/design.md "Scheduling and fairness"). */
#define ROCE_TP_STATS_SCHED(X)                                                 \
	X(sched_polls)        /* poll passes with work */                      \
	X(sched_turns)        /* QP turns run */                               \
	X(sched_budget_out)   /* passes that ended with QPs still queued */    \
	X(sched_quiet_rearms) /* idle quiet rings given kicks back */          \
	X(sched_poll_scans)   /* rounds over kick-less rings */                \
	X(sched_poll_idle)    /* ... that found nothing */                     \
	X(sched_poll_ivl_max) /* ... rounds made at the longest interval */

/* "roce ext" line: before the events by type (ev_by_type[]). */
#define ROCE_EXT_STATS_EVQ(X)                                                  \
	X(ev_written)            /* events written to the ring */

/* "roce ext" line, after the events by type. */
#define ROCE_EXT_STATS(X)                                                      \
	X(ev_short_bufs)         /* buffers < 16 bytes given back */           \
	X(ev_waits)              /* deliveries that ran out of buffers */      \
	X(ev_ring_errors)        /* event ring broken */                       \
	X(ev_raised)             /* raised by the engine */                    \
	X(srq_created)                                                         \
	X(srq_destroyed)                                                       \
	X(srq_recv_wrs)          /* elements taken from SRQ rings */           \
	X(srq_empty)             /* a message found its SRQ empty */           \
	X(srq_limit_events)                                                    \
	X(srq_errors)            /* SRQ rings broken */                        \
	X(srq_flushed)           /* held WQEs flushed (QP to ERR...) */        \
	X(srq_dropped)           /* requests dropped by DESTROY_SRQ */         \
	X(srq_ring_stopped)      /* SRQ rings taken back while live */         \
	X(last_wqe_events)                                                     \
	X(cq_resizes)                                                          \
	X(cq_resize_range)                                                     \
	X(cq_resize_nomem)                                                     \
	X(qp_resizes)                                                          \
	X(qp_resize_range)                                                     \
	X(qp_resize_nomem)                                                     \
	X(wc_ext)                /* with an extension opcode/status/flag */    \
	X(wc_ext_blocked)        /* ... refused without ROCE_EXT (bug) */      \
	X(cq_err_events)                                                       \
	X(qp_fatal_events)                                                     \
	X(sq_drained_events)

/* A counter field of a generated struct. */
#define ROCE_STATS_FIELD(name) uint64_t name;

#endif
