/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver's shared memory as the device sees it: a table of regions, each
 * an mmap of an fd the front-end passed (SET_MEM_TABLE / ADD_MEM_REG).
 *
 * Two address spaces are translated:
 *  - guest physical addresses (GPA): what descriptors, SGEs and MR page arrays
 *    carry;
 *  - front-end user addresses (UVA): what SET_VRING_ADDR carries.
 * (libvrdma uses identity mapping, GPA == UVA == its own virtual address; QEMU
 * and DPDK do not.)
 *
 * Every translation checks the whole range [addr, addr + len): a range that is
 * not entirely inside shared memory is refused (NULL / -EFAULT). This is the
 * device's only way to reach driver memory, so it is the security boundary.
 *
 * Regions are reference counted: an object that keeps pointers into a region
 * across events (a vring, a memory region of the RDMA device) holds a
 * reference. REM_MEM_REG or a new SET_MEM_TABLE removes a region from lookup at
 * once, but its mapping lives until the last reference is dropped, so the
 * device never touches unmapped memory. Holders learn about removal through
 * vhost_mem_region_dead().
 *
 * Truncation (the driver shrinks a file it shared, so that our accesses would
 * raise SIGBUS): vhost_mem_add() seals a sealable fd (memfd, hugetlbfs memfd)
 * with F_SEAL_SHRINK itself. Regions whose fd cannot be sealed (hugetlbfs or
 * tmpfs files, memfds created without MFD_ALLOW_SEALING or already
 * F_SEAL_SEAL'ed) and hugetlbfs regions (which can also fault when the huge
 * page pool runs dry) are "guarded": a process-wide SIGBUS handler, installed
 * on first need, maps anonymous zero pages over the rest of the region from
 * the faulting page on (so the access completes), counts the fault on the
 * table (vhost_mem_faults()) and signals the table's fault_fd. The owner must
 * then, from its loop, give up on that driver (vhost_server disconnects it).
 * A SIGBUS at any other address gets the previous disposition (by default:
 * the process dies, as before).
 *
 * Budget of mappings (vm.max_map_count is shared by every device of the
 * process): at most max_regions live regions, and at most max_regions +
 * max_dead live plus removed-but-still-mapped ("dead") regions together;
 * vhost_mem_add() refuses a region beyond that (-ENOSPC) until holders let go.
 *
 * Not thread-safe: used from the loop thread that owns the device (the SIGBUS
 * machinery alone is process-wide and safe against other loops' threads).
 */
#ifndef VRDMA_VHOST_MEM_H
#define VRDMA_VHOST_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Most regions one device accepts (GET_MAX_MEM_SLOTS answers this). */
#define VHOST_MEM_MAX_REGIONS 509
/* Most removed regions a table keeps mapped for their holders (see above). */
#define VHOST_MEM_MAX_DEAD 1024
/* UVA lookups look at most this many overlapping candidates (front-ends do
 * not give overlapping user address ranges; a hostile one gets no more). */
#define VHOST_MEM_UVA_SCAN 16

struct vhost_mem_acct;

struct vhost_mem_region {
	uint64_t gpa;         /* guest physical start */
	uint64_t size;        /* bytes */
	uint64_t uva;         /* front-end user address of gpa */
	uint64_t mmap_offset; /* offset of gpa inside the fd */
	uint8_t *host;        /* our address of gpa */
	void *map_base;       /* what mmap returned (for munmap) */
	size_t map_len;
	unsigned refcnt;      /* table's reference + holders */
	bool dead;            /* removed from the table */
	bool sealed;          /* F_SEAL_SHRINK holds: cannot be truncated */
	int guard;            /* SIGBUS guard slot, -1: not guarded (private) */
	struct vhost_mem_acct *acct; /* accounting shared with the table (private) */
};

struct vhost_mem {
	struct vhost_mem_region **regions; /* live regions, sorted by gpa */
	unsigned nregions;
	unsigned max_regions;              /* VHOST_MEM_MAX_REGIONS by default */
	uint64_t generation;               /* bumped on every change */
	/* Additive */
	struct vhost_mem_region **by_uva;  /* live regions, sorted by uva */
	uint64_t *uva_maxlast;             /* prefix max of uva + size - 1 */
	unsigned cap;                      /* room in the three arrays */
	unsigned max_dead;                 /* VHOST_MEM_MAX_DEAD by default */
	int fault_fd;                      /* see vhost_mem_set_fault_fd(), -1 */
	struct vhost_mem_acct *acct;       /* private */
	/* Budget of mapped bytes (live + dead regions), 0 = none: a region
	 * beyond it is refused with -EDQUOT and counted. */
	uint64_t max_mapped;
	uint64_t mapped_refused;
	/* A budget shared with other tables (the contexts of one device), or
	 * NULL: when set it replaces max_mapped. Set before the first region;
	 * the owner keeps it alive while the table exists. */
	struct vhost_mem_budget *budget;
};

/* Mapped bytes of several tables together (a device's contexts): every
 * region counts from its mmap to its munmap, also after its table is gone.
 * Reference counted: the owner and each table account that uses it. */
struct vhost_mem_budget {
	unsigned refs;
	uint64_t max;      /* 0: no limit */
	uint64_t mapped;   /* live and dead regions of every table */
	uint64_t refused;  /* regions refused (-EDQUOT) */
};

/* A budget of max bytes with one reference (the caller's), or NULL. */
struct vhost_mem_budget *vhost_mem_budget_new(uint64_t max);
void vhost_mem_budget_put(struct vhost_mem_budget *b);

void vhost_mem_init(struct vhost_mem *m);

/* fn runs before any region is unmapped (on the thread that drops the last
 * reference): the one-copy local path copies payloads it references out of
 * mappings that are about to go (pkt_ref_fill_all). NULL: none. */
void vhost_mem_set_unmap_hook(void (*fn)(void));
/* Drop every region (mappings with holders stay until they are released) and
 * start a fresh account: regions still held no longer count against this
 * table's budget, and their faults are no longer reported here. */
void vhost_mem_clear(struct vhost_mem *m);
/* Additive: remove every live region like vhost_mem_remove() does, keeping
 * the account (dead regions still count; faults are still reported). */
void vhost_mem_remove_all(struct vhost_mem *m);

/*
 * Map fd and add the region. Takes ownership of fd in every case (closed after
 * mmap or on error). Validates: size > 0, no overflow of gpa+size, uva+size,
 * offset+size; no overlap in GPA with a live region; table not full and the
 * live + dead budget not used up; a regular file long enough (checked after
 * sealing); mmap succeeds. Seals or guards the region (see above). Returns 0
 * or -errno (-EINVAL, -EEXIST overlap, -ENOSPC table, budget or guard slots
 * full, -EDQUOT beyond max_mapped, mmap or sigaction errno).
 */
int vhost_mem_add(struct vhost_mem *m, uint64_t gpa, uint64_t size, uint64_t uva,
		  uint64_t mmap_offset, int fd);

/* Remove the live region that exactly matches gpa/size (and uva). Returns 0 or
 * -ENOENT. The mapping stays while references are held. */
int vhost_mem_remove(struct vhost_mem *m, uint64_t gpa, uint64_t size, uint64_t uva);

/* Host pointer for [gpa, gpa+len) if it lies inside one live region, else NULL.
 * len == 0 is treated as 1 for the containment check. */
void *vhost_mem_gpa_to_host(const struct vhost_mem *m, uint64_t gpa, uint64_t len);

/* The same for front-end user addresses (vring addresses). O(log n). */
void *vhost_mem_uva_to_host(const struct vhost_mem *m, uint64_t uva, uint64_t len);
/* Additive: a live region containing all of [uva, uva+len) (len 0 counts as
 * 1), or NULL. */
struct vhost_mem_region *vhost_mem_find_uva(const struct vhost_mem *m, uint64_t uva,
					    uint64_t len);

/* The live region containing gpa, or NULL. */
struct vhost_mem_region *vhost_mem_find(const struct vhost_mem *m, uint64_t gpa);

/*
 * Split [gpa, gpa+len) over regions into at most max iovecs. Returns the number
 * of iovecs used, -EFAULT if any byte is outside shared memory, -E2BIG if more
 * than max pieces would be needed.
 */
int vhost_mem_gpa_to_iov(const struct vhost_mem *m, uint64_t gpa, uint64_t len,
			 struct iovec *iov, unsigned max);

/* References for holders that keep host pointers past the current event. */
void vhost_mem_region_get(struct vhost_mem_region *r);
void vhost_mem_region_put(struct vhost_mem_region *r);
static inline bool vhost_mem_region_dead(const struct vhost_mem_region *r) { return r->dead; }

/*
 * Additive. fd (an eventfd, or -1) gets 1 added from the SIGBUS handler
 * whenever an access to one of this table's regions faulted; the caller keeps
 * ownership and must set -1 (or clear the table) before closing it.
 */
void vhost_mem_set_fault_fd(struct vhost_mem *m, int fd);
/* Additive: faults in this table's regions (live or dead) since the last
 * vhost_mem_clear(). */
uint64_t vhost_mem_faults(const struct vhost_mem *m);
/* Bytes mapped by the regions of the current account (live and dead). */
uint64_t vhost_mem_mapped(const struct vhost_mem *m);
/* Additive: removed regions still mapped for their holders. */
unsigned vhost_mem_ndead(const struct vhost_mem *m);
/* Additive: guarded regions of the whole process (see above). */
unsigned vhost_mem_guarded_regions(void);

#endif /* VRDMA_VHOST_MEM_H */
