// SPDX-License-Identifier: BSD-3-Clause
/*
 * The rsocket API (r* calls of <rdma/rsocket.h>): present so that programs
 * linked against librdmacm start, but not implemented: every call fails with
 * ENOSYS (docs/spec.md, "rdma_cm over the device's connection
 * manager").
 */
#include <errno.h>
#include <sys/select.h>

#include <rdma/rsocket.h>

#include "rdmacm/rdmacm_priv.h"

#define RS_NOSYS(ret) do { errno = ENOSYS; return (ret); } while (0)

RCM_EXPORT int rsocket(int domain, int type, int protocol)
{ (void)domain; (void)type; (void)protocol; RS_NOSYS(-1); }
RCM_EXPORT int rbind(int s, const struct sockaddr *a, socklen_t l)
{ (void)s; (void)a; (void)l; RS_NOSYS(-1); }
RCM_EXPORT int rlisten(int s, int b) { (void)s; (void)b; RS_NOSYS(-1); }
RCM_EXPORT int raccept(int s, struct sockaddr *a, socklen_t *l)
{ (void)s; (void)a; (void)l; RS_NOSYS(-1); }
RCM_EXPORT int rconnect(int s, const struct sockaddr *a, socklen_t l)
{ (void)s; (void)a; (void)l; RS_NOSYS(-1); }
RCM_EXPORT int rshutdown(int s, int how) { (void)s; (void)how; RS_NOSYS(-1); }
RCM_EXPORT int rclose(int s) { (void)s; RS_NOSYS(-1); }
RCM_EXPORT ssize_t rrecv(int s, void *b, size_t n, int f)
{ (void)s; (void)b; (void)n; (void)f; RS_NOSYS(-1); }
RCM_EXPORT ssize_t rrecvfrom(int s, void *b, size_t n, int f, struct sockaddr *a, socklen_t *l)
{ (void)s; (void)b; (void)n; (void)f; (void)a; (void)l; RS_NOSYS(-1); }
RCM_EXPORT ssize_t rrecvmsg(int s, struct msghdr *m, int f) { (void)s; (void)m; (void)f; RS_NOSYS(-1); }
RCM_EXPORT ssize_t rsend(int s, const void *b, size_t n, int f)
{ (void)s; (void)b; (void)n; (void)f; RS_NOSYS(-1); }
RCM_EXPORT ssize_t rsendto(int s, const void *b, size_t n, int f, const struct sockaddr *a,
			   socklen_t l)
{ (void)s; (void)b; (void)n; (void)f; (void)a; (void)l; RS_NOSYS(-1); }
RCM_EXPORT ssize_t rsendmsg(int s, const struct msghdr *m, int f)
{ (void)s; (void)m; (void)f; RS_NOSYS(-1); }
RCM_EXPORT ssize_t rread(int s, void *b, size_t n) { (void)s; (void)b; (void)n; RS_NOSYS(-1); }
RCM_EXPORT ssize_t rreadv(int s, const struct iovec *v, int c) { (void)s; (void)v; (void)c; RS_NOSYS(-1); }
RCM_EXPORT ssize_t rwrite(int s, const void *b, size_t n) { (void)s; (void)b; (void)n; RS_NOSYS(-1); }
RCM_EXPORT ssize_t rwritev(int s, const struct iovec *v, int c) { (void)s; (void)v; (void)c; RS_NOSYS(-1); }
RCM_EXPORT int rpoll(struct pollfd *f, nfds_t n, int t) { (void)f; (void)n; (void)t; RS_NOSYS(-1); }
RCM_EXPORT int rselect(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{ (void)n; (void)r; (void)w; (void)e; (void)t; RS_NOSYS(-1); }
RCM_EXPORT int rgetpeername(int s, struct sockaddr *a, socklen_t *l)
{ (void)s; (void)a; (void)l; RS_NOSYS(-1); }
RCM_EXPORT int rgetsockname(int s, struct sockaddr *a, socklen_t *l)
{ (void)s; (void)a; (void)l; RS_NOSYS(-1); }
RCM_EXPORT int rsetsockopt(int s, int lv, int o, const void *v, socklen_t l)
{ (void)s; (void)lv; (void)o; (void)v; (void)l; RS_NOSYS(-1); }
RCM_EXPORT int rgetsockopt(int s, int lv, int o, void *v, socklen_t *l)
{ (void)s; (void)lv; (void)o; (void)v; (void)l; RS_NOSYS(-1); }
RCM_EXPORT int rfcntl(int s, int cmd, ...) { (void)s; (void)cmd; RS_NOSYS(-1); }
RCM_EXPORT off_t riomap(int s, void *b, size_t n, int p, int f, off_t o)
{ (void)s; (void)b; (void)n; (void)p; (void)f; (void)o; RS_NOSYS((off_t)-1); }
RCM_EXPORT int riounmap(int s, void *b, size_t n) { (void)s; (void)b; (void)n; RS_NOSYS(-1); }
RCM_EXPORT size_t riowrite(int s, const void *b, size_t n, off_t o, int f)
{ (void)s; (void)b; (void)n; (void)o; (void)f; RS_NOSYS(0); }
