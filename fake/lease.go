package fake

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Lease states, as x-ms-lease-state names them.
const (
	leaseAvailable = "available"
	leaseLeased    = "leased"
	leaseExpired   = "expired"
	leaseBreaking  = "breaking"
	leaseBroken    = "broken"
)

// lease is the lease of a blob or a container: the state machine of "Lease
// Blob" and "Lease Container", with expiry and breaking on the service's
// clock. The zero value is available.
type lease struct {
	state    string // "" is available
	id       string
	infinite bool
	period   time.Duration // a fixed lease's length
	expires  time.Time     // a fixed lease's end
	broken   time.Time     // a breaking lease's end
}

// settle moves the state along the clock: a fixed lease past its end
// expires, a breaking lease past its break period is broken.
func (l *lease) settle(now time.Time) {
	switch {
	case l.state == "":
		l.state = leaseAvailable
	case l.state == leaseLeased && !l.infinite && !now.Before(l.expires):
		l.state = leaseExpired
	case l.state == leaseBreaking && !now.Before(l.broken):
		l.state = leaseBroken
	}
}

// active is whether the lease guards writes: leased or breaking.
func (l *lease) active() bool { return l.state == leaseLeased || l.state == leaseBreaking }

func (l *lease) status() string {
	if l.active() {
		return "locked"
	}
	return "unlocked"
}

func (l *lease) duration() string {
	if l.infinite {
		return "infinite"
	}
	return "fixed"
}

// headers adds the x-ms-lease-* headers of Get Blob / Get Container Properties.
func (l *lease) headers(h http.Header) {
	h.Set("X-Ms-Lease-State", l.state)
	h.Set("X-Ms-Lease-Status", l.status())
	if l.state == leaseLeased {
		h.Set("X-Ms-Lease-Duration", l.duration())
	}
}

// wrote records a successful write without a lease: an expired or broken
// lease then ends, and the blob is available.
func (l *lease) wrote() {
	if l.state == leaseExpired || l.state == leaseBroken {
		*l = lease{state: leaseAvailable}
	}
}

// leaseAllows applies the lease rules to a request on a blob or container
// (kind "Blob" or "Container") whose lease is l (nil: the resource does not
// exist yet). A write to a resource under an active lease must carry its
// lease ID; a request that carries a lease ID needs that lease active.
func leaseAllows(req *http.Request, l *lease, write bool, kind string) *http.Response {
	id := req.Header.Get("X-Ms-Lease-Id")
	switch {
	case l == nil || !l.active():
		if id == "" {
			return nil
		}
		// The ID of a lease that expired or was broken: the lease is
		// lost, not absent.
		if l != nil && (l.state == leaseExpired || l.state == leaseBroken) && l.id == id {
			return blobError(req, http.StatusPreconditionFailed, "LeaseLost")
		}
		return blobError(req, http.StatusPreconditionFailed, "LeaseNotPresentWith"+kind+"Operation")
	case id == "":
		if write {
			return blobError(req, http.StatusPreconditionFailed, "LeaseIdMissing")
		}
		return nil
	case id != l.id:
		return blobError(req, http.StatusPreconditionFailed, "LeaseIdMismatchWith"+kind+"Operation")
	}
	return nil
}

// leaseAction serves Lease Blob and Lease Container: the x-ms-lease-action
// acquire, renew, change, release or break, with the answers of the
// service's lease state table. etag and modified are the resource's, which
// a lease operation answers with and does not change.
func (s *BlobService) leaseAction(req *http.Request, l *lease, etag string, modified, now time.Time) *http.Response {
	l.settle(now)
	id := req.Header.Get("X-Ms-Lease-Id")
	proposed := req.Header.Get("X-Ms-Proposed-Lease-Id")
	h := http.Header{}
	h.Set("ETag", etag)
	h.Set("Last-Modified", rfc1123(modified))
	ok := func(status int) *http.Response {
		if status != http.StatusAccepted {
			h.Set("X-Ms-Lease-Id", l.id)
		}
		return response(req, status, h, nil)
	}
	conflict := func(code string) *http.Response { return blobError(req, http.StatusConflict, code) }
	switch action := req.Header.Get("X-Ms-Lease-Action"); action {
	case "acquire":
		d, err := strconv.Atoi(req.Header.Get("X-Ms-Lease-Duration"))
		if err != nil || (d != infiniteLease && (d < minLeaseSeconds || d > maxLeaseSeconds)) {
			return blobError(req, http.StatusBadRequest, "InvalidHeaderValue")
		}
		if proposed == "" {
			proposed = newLeaseID()
		}
		switch l.state {
		case leaseBreaking:
			if l.id != proposed {
				return conflict("LeaseAlreadyPresent")
			}
			return conflict("LeaseIsBreakingAndCannotBeAcquired")
		case leaseLeased:
			if l.id != proposed {
				return conflict("LeaseAlreadyPresent")
			}
		}
		l.state, l.id, l.infinite = leaseLeased, proposed, d == infiniteLease
		l.period = time.Duration(d) * time.Second
		l.expires = now.Add(l.period)
		return ok(http.StatusCreated)
	case "renew":
		if id == "" {
			return blobError(req, http.StatusBadRequest, "MissingRequiredHeader")
		}
		switch {
		case l.state == leaseAvailable:
			return conflict("LeaseIdMismatchWithLeaseOperation")
		case l.id != id:
			return conflict("LeaseIdMismatchWithLeaseOperation")
		case l.state == leaseBreaking || l.state == leaseBroken:
			// A breaking lease is as good as broken to a renew (Azurite's
			// code; the docs' state table gives only the 409).
			return conflict("LeaseIsBrokenAndCannotBeRenewed")
		}
		// Leased or expired with this ID: a fresh period of the same length.
		l.expires = now.Add(l.period)
		l.state = leaseLeased
		return ok(http.StatusOK)
	case "change":
		if id == "" || proposed == "" {
			return blobError(req, http.StatusBadRequest, "MissingRequiredHeader")
		}
		switch {
		case l.state == leaseAvailable || l.state == leaseExpired || l.state == leaseBroken:
			return conflict("LeaseNotPresentWithLeaseOperation")
		case l.state == leaseBreaking:
			return conflict("LeaseIsBreakingAndCannotBeChanged")
		case l.id != id && l.id != proposed:
			return conflict("LeaseIdMismatchWithLeaseOperation")
		}
		l.id = proposed
		return ok(http.StatusOK)
	case "release":
		if id == "" {
			return blobError(req, http.StatusBadRequest, "MissingRequiredHeader")
		}
		if l.state == leaseAvailable || l.id != id {
			return conflict("LeaseIdMismatchWithLeaseOperation")
		}
		*l = lease{state: leaseAvailable}
		return response(req, http.StatusOK, h, nil)
	case "break":
		period := -1
		if v := req.Header.Get("X-Ms-Lease-Break-Period"); v != "" {
			p, err := strconv.Atoi(v)
			if err != nil || p < 0 || p > maxBreakSeconds {
				return blobError(req, http.StatusBadRequest, "InvalidHeaderValue")
			}
			period = p
		}
		switch l.state {
		case leaseAvailable:
			return conflict("LeaseNotPresentWithLeaseOperation")
		case leaseLeased:
			// A fixed lease breaks when its period ends, or sooner if a
			// break period says so; an infinite one at once by default.
			end := now
			if !l.infinite {
				end = l.expires
			}
			if period >= 0 {
				end = minTime(end, now.Add(time.Duration(period)*time.Second))
			}
			l.state, l.broken = leaseBreaking, end
		case leaseBreaking:
			if period >= 0 {
				l.broken = minTime(l.broken, now.Add(time.Duration(period)*time.Second))
			}
		case leaseExpired:
			l.state, l.broken = leaseBroken, now
		}
		l.settle(now)
		left := 0
		if l.state == leaseBreaking {
			left = int((l.broken.Sub(now) + time.Second - 1) / time.Second)
		}
		h.Set("X-Ms-Lease-Time", strconv.Itoa(left))
		return response(req, http.StatusAccepted, h, nil)
	default:
		return blobError(req, http.StatusBadRequest, "InvalidHeaderValue")
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// newLeaseID makes a lease ID, a GUID, for an acquire without a proposed ID.
func newLeaseID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
