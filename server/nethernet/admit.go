package nethernet

import (
	"container/list"
	"context"
	"net/netip"
	"sync"
	"time"

	gonn "github.com/df-mc/go-nethernet"
)

// Admission defaults, for zero Config fields.
const (
	// DefaultOffersPerSource is how many offers one source (an IPv4
	// address, an IPv6 /64) may send a second, with a burst of as many:
	// a household of 16 behind one address, joining 100 ms apart, all
	// get in.
	DefaultOffersPerSource = 16
	// DefaultNegotiationsPerSource is how many negotiations one source
	// may have in progress; a slot frees the moment its negotiation ends,
	// in success or failure.
	DefaultNegotiationsPerSource = 16
	// DefaultProofWindow is how long an answered offer may wait for the
	// client's first ICE check (a STUN binding request with valid
	// MESSAGE-INTEGRITY, which an honest client sends one round trip
	// after the answer) before its peer connection is torn down.
	DefaultProofWindow = 2 * time.Second
	// DefaultAnswerWait bounds how long an admitted offer waits for its
	// turn to be answered before it is refused as busy.
	DefaultAnswerWait = 2 * time.Second
	// prefixFactor is how many times a source's limits a prefix (an IPv4
	// /24, an IPv6 /48) gets: a few households, a school.
	prefixFactor = 4
	// waitingPerSource is how many offers of one source may wait for an
	// answering turn at once, so that a source that floods waits behind
	// its own offers, not a player's.
	waitingPerSource = 4
)

// refusal is why admission refused an offer; refusedNone admits it.
type refusal int

const (
	refusedNone refusal = iota
	refusedRate
	refusedSourceBusy
	refusedBusy
)

// String names the refusal as the metrics and summaries do.
func (r refusal) String() string {
	switch r {
	case refusedRate:
		return "rate_limited"
	case refusedSourceBusy:
		return "source_busy"
	case refusedBusy:
		return "busy"
	}
	return "none"
}

// connKey names one negotiation, whatever carried its offer: the
// client's network ID and the connection ID of its signals.
type connKey struct {
	networkID    string
	connectionID uint64
}

// ticketState is where a negotiation is.
type ticketState uint8

const (
	ticketAnswering ticketState = iota // admitted, not yet answered
	ticketAnswered                     // answered, no valid ICE check yet
	ticketProven                       // the client's ICE check arrived
	ticketDone                         // released
)

// ticket is one admitted negotiation: it holds a slot of its source's,
// of its prefix's and of the global cap until released.
type ticket struct {
	a       *admission
	from    netip.Addr   // the address the offer came from
	src     netip.Addr   // the source key: an IPv4 address, an IPv6 /64
	pfx     netip.Prefix // an IPv4 /24, an IPv6 /48
	trusted bool
	key     connKey
	bound   bool

	// Guarded by a.mu.
	state     ticketState
	ufrag     string
	pwd       string
	admitted  time.Time
	elem      *list.Element // in a.unproven while answered
	timer     *time.Timer
	cancel    context.CancelFunc // the peer connection's start, once known
	evicted   bool
	waiting   bool // holds a waiting place of its source's
	turn      bool // holds an answering turn
	proofAddr netip.AddrPort
	offered   bool           // the offer was handed to go-nethernet
	queued    []*gonn.Signal // signals that came before the offer went on
}

// maxQueuedSignals bounds the signals held for a negotiation whose offer
// waits for its answering turn: a client trickles a few candidates.
const maxQueuedSignals = 16

// admitConfig are admission's limits, defaults applied.
type admitConfig struct {
	max             int           // negotiations in progress, all sources
	answering       int           // offers handed to go-nethernet at once
	perSource       int           // negotiations per source; < 0 no cap
	ratePerSource   int           // offers per source per second; < 0 no cap
	proofWindow     time.Duration // until the first ICE check
	timeout         time.Duration // a negotiation's whole time
	answerWait      time.Duration // waiting for an answering turn
	trusted         func(netip.Addr) bool
	maxTrackedAddrs int
}

// admission is the one path every offer takes, whatever carried it: the
// rate per source and per prefix, negotiation slots per source and per
// prefix, the global cap, the answering turns, and the proof that the
// client completes ICE. It holds no WebRTC state itself: a refused offer
// costs a map lookup, an admitted one a ticket until its negotiation
// ends.
type admission struct {
	conf  admitConfig
	stats *counters

	rateSrc, ratePfx *ipLimiter
	turns            chan struct{}

	mu       sync.Mutex
	held     int
	bySrc    map[netip.Addr]int
	byPfx    map[netip.Prefix]int
	waiting  map[netip.Addr]int
	byConn   map[connKey]*ticket
	byUfrag  map[string]*ticket
	unproven *list.List // answered tickets, oldest first
	closed   bool
}

func newAdmission(c admitConfig, stats *counters) *admission {
	c.maxTrackedAddrs = cmpOr(c.maxTrackedAddrs, maxTrackedIPs)
	a := &admission{
		conf:     c,
		stats:    stats,
		turns:    make(chan struct{}, c.answering),
		bySrc:    make(map[netip.Addr]int),
		byPfx:    make(map[netip.Prefix]int),
		waiting:  make(map[netip.Addr]int),
		byConn:   make(map[connKey]*ticket),
		byUfrag:  make(map[string]*ticket),
		unproven: list.New(),
	}
	if c.ratePerSource > 0 {
		a.rateSrc = newIPLimiter(c.ratePerSource, c.maxTrackedAddrs)
		a.ratePfx = newIPLimiter(c.ratePerSource*prefixFactor, c.maxTrackedAddrs)
	}
	return a
}

// sourceOf returns the keys limits count addr by: the source (an IPv4
// address, an IPv6 /64) and its prefix (an IPv4 /24, an IPv6 /48).
func sourceOf(addr netip.Addr) (netip.Addr, netip.Prefix) {
	addr = addr.Unmap()
	if addr.Is4() {
		p, _ := addr.Prefix(24)
		return addr, p
	}
	s, _ := addr.Prefix(64)
	p, _ := addr.Prefix(48)
	return s.Addr(), p
}

// isTrusted reports whether addr is a trusted proxy's, which no
// per-source limit applies to.
func (a *admission) isTrusted(addr netip.Addr) bool {
	return a.conf.trusted != nil && addr.IsValid() && a.conf.trusted(addr.Unmap())
}

// allowRate charges one offer to addr's source and prefix and reports
// whether both are within their rate. Trusted proxies are not charged.
func (a *admission) allowRate(addr netip.Addr, now time.Time) bool {
	if a.rateSrc == nil || a.isTrusted(addr) {
		return true
	}
	src, pfx := sourceOf(addr)
	if !a.rateSrc.allow(src, now) || !a.ratePfx.allow(pfx.Addr(), now) {
		a.stats.rateLimited.Add(1)
		return false
	}
	return true
}

// admit takes a negotiation slot for an offer from addr: of its source's,
// its prefix's and the global cap. With the cap full, the oldest answered
// negotiation whose client has not completed an ICE check gives up its
// place; an honest client completes one within a round trip of the
// answer. The ticket must be released when the negotiation ends.
func (a *admission) admit(addr netip.Addr, now time.Time) (*ticket, refusal) {
	src, pfx := sourceOf(addr)
	t := &ticket{a: a, from: addr.Unmap(), src: src, pfx: pfx, trusted: a.isTrusted(addr), admitted: now}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, refusedBusy
	}
	if !t.trusted && a.conf.perSource > 0 {
		if a.bySrc[src] >= a.conf.perSource || a.byPfx[pfx] >= a.conf.perSource*prefixFactor {
			a.mu.Unlock()
			a.stats.sourceBusy.Add(1)
			return nil, refusedSourceBusy
		}
		if _, ok := a.bySrc[src]; !ok && len(a.bySrc) >= a.conf.maxTrackedAddrs {
			a.mu.Unlock()
			a.stats.busy.Add(1)
			return nil, refusedBusy
		}
	}
	if a.held >= a.conf.max {
		if e := a.unproven.Front(); e != nil {
			a.evictLocked(e.Value.(*ticket))
		}
		if a.held >= a.conf.max {
			a.mu.Unlock()
			a.stats.busy.Add(1)
			return nil, refusedBusy
		}
	}
	a.held++
	a.bySrc[src]++
	a.byPfx[pfx]++
	a.stats.inFlight.Add(1)
	a.mu.Unlock()
	return t, refusedNone
}

// bind names t's negotiation, so the carrier's signals and the peer
// connection find it. It reports false if the name is taken.
func (t *ticket) bind(key connKey) bool {
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, taken := a.byConn[key]; taken || t.state == ticketDone {
		return false
	}
	t.key, t.bound = key, true
	a.byConn[key] = t
	return true
}

// wait waits for t's answering turn, at most answerWait or until ctx is
// done, and reports whether it got one. At most waitingPerSource offers of
// one source wait at once. The turn is given back when t is answered or
// released.
func (t *ticket) wait(ctx context.Context) bool {
	a := t.a
	a.mu.Lock()
	if !t.trusted && a.waiting[t.src] >= waitingPerSource {
		a.mu.Unlock()
		return false
	}
	a.waiting[t.src]++
	t.waiting = true
	a.mu.Unlock()
	defer t.doneWaiting()

	timer := time.NewTimer(a.conf.answerWait)
	defer timer.Stop()
	select {
	case a.turns <- struct{}{}:
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.state == ticketDone {
		<-a.turns
		return false
	}
	t.turn = true
	return true
}

// doneWaiting gives back t's waiting place.
func (t *ticket) doneWaiting() {
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if !t.waiting {
		return
	}
	t.waiting = false
	if a.waiting[t.src]--; a.waiting[t.src] <= 0 {
		delete(a.waiting, t.src)
	}
}

// giveTurnLocked gives back t's answering turn. a.mu is held.
func (t *ticket) giveTurnLocked() {
	if t.turn {
		t.turn = false
		<-t.a.turns
	}
}

// answered records that key's negotiation was answered with sdp: its
// ICE credentials name the client's first ICE check, which must arrive
// within proofWindow.
func (a *admission) answered(key connKey, sdp string) {
	ufrag, pwd := iceCredentials(sdp)
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.byConn[key]
	if !ok || t.state != ticketAnswering {
		return
	}
	t.giveTurnLocked()
	a.stats.answered.Add(1)
	t.state = ticketAnswered
	if ufrag != "" {
		if _, taken := a.byUfrag[ufrag]; !taken {
			t.ufrag, t.pwd = ufrag, pwd
			a.byUfrag[ufrag] = t
		}
	}
	t.elem = a.unproven.PushBack(t)
	t.timer = time.AfterFunc(a.conf.proofWindow, func() { a.expire(t) })
}

// expire ends t if its client has sent no valid ICE check in time, or
// if its whole negotiation time is up.
func (a *admission) expire(t *ticket) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.state == ticketAnswered || t.state == ticketProven {
		a.evictLocked(t)
	}
}

// evictLocked tears t's peer connection down (or has it torn down as
// soon as it starts) and releases t. a.mu is held.
func (a *admission) evictLocked(t *ticket) {
	if t.state == ticketAnswered {
		a.stats.unproven.Add(1)
	}
	t.evicted = true
	if t.cancel != nil {
		t.cancel()
	}
	a.releaseLocked(t)
}

// proven records a valid ICE check for the negotiation whose local ICE
// username fragment is ufrag, checked by check against its password;
// from then on it has the rest of its negotiation time.
func (a *admission) proven(ufrag string, from netip.AddrPort, check func(pwd string) bool) {
	a.mu.Lock()
	t, ok := a.byUfrag[ufrag]
	if !ok || t.state != ticketAnswered {
		a.mu.Unlock()
		return
	}
	pwd := t.pwd
	a.mu.Unlock()
	if !check(pwd) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.state != ticketAnswered {
		return
	}
	t.state = ticketProven
	t.proofAddr = from
	a.stats.proven.Add(1)
	a.unproven.Remove(t.elem)
	t.elem = nil
	delete(a.byUfrag, t.ufrag)
	if t.timer != nil {
		t.timer.Stop()
	}
	rest := a.conf.timeout - time.Since(t.admitted)
	t.timer = time.AfterFunc(max(rest, 0), func() { a.expire(t) })
}

// ticketOf returns the ticket of key's negotiation, nil if it has none.
func (a *admission) ticketOf(key connKey) *ticket {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byConn[key]
}

// origin returns where t's client was seen: the address its offer came
// from and the one its first valid ICE check came from, if it came.
func (a *admission) origin(t *ticket) (offer netip.Addr, check netip.AddrPort) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return t.from, t.proofAddr
}

// unprovenByUfrag reports whether ufrag names an answered negotiation still
// waiting for its first ICE check: only then is a check worth verifying.
func (a *admission) unprovenByUfrag(ufrag string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.byUfrag[ufrag]
	return ok && t.state == ticketAnswered
}

// connContext is go-nethernet's ListenConfig.ConnContext: it bounds an
// answered peer's ICE, DTLS and SCTP start by what is left of its
// negotiation time, lets admission tear it down, and releases its ticket
// when the start ends, in success or failure.
func (a *admission) connContext(parent context.Context, key connKey) (context.Context, context.CancelFunc) {
	a.mu.Lock()
	t := a.byConn[key]
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(parent, a.conf.timeout)
	a.stats.halfOpen.Add(1)
	a.mu.Lock()
	switch {
	case t == nil || t.evicted || t.state == ticketDone:
		// Not admitted, or no longer: an answer that came after its
		// request gave up, say. Nothing is held for it.
		cancel()
	default:
		t.cancel = cancel
	}
	a.mu.Unlock()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			if ctx.Err() != nil && parent.Err() == nil {
				a.stats.failed.Add(1)
			}
			cancel()
			a.stats.halfOpen.Add(-1)
			if t != nil {
				t.release()
			}
		})
	}
}

// release gives back everything t holds. It is safe to call more than
// once.
func (t *ticket) release() {
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked(t)
}

// releaseLocked is release with a.mu held.
func (a *admission) releaseLocked(t *ticket) {
	if t.state == ticketDone {
		return
	}
	t.giveTurnLocked()
	t.state = ticketDone
	if t.timer != nil {
		t.timer.Stop()
	}
	if t.elem != nil {
		a.unproven.Remove(t.elem)
		t.elem = nil
	}
	if t.ufrag != "" && a.byUfrag[t.ufrag] == t {
		delete(a.byUfrag, t.ufrag)
	}
	if t.bound && a.byConn[t.key] == t {
		delete(a.byConn, t.key)
	}
	a.held--
	if a.bySrc[t.src]--; a.bySrc[t.src] <= 0 {
		delete(a.bySrc, t.src)
	}
	if a.byPfx[t.pfx]--; a.byPfx[t.pfx] <= 0 {
		delete(a.byPfx, t.pfx)
	}
	a.stats.inFlight.Add(-1)
}

// close refuses every offer from now on and tears down the negotiations
// in progress.
func (a *admission) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for _, t := range a.byConn {
		t.evicted = true
		if t.cancel != nil {
			t.cancel()
		}
		a.releaseLocked(t)
	}
	for _, t := range a.byUfrag {
		a.releaseLocked(t)
	}
}

// heldBy returns the negotiations in progress of addr's source and prefix
// and in all, for tests and summaries.
func (a *admission) heldBy(addr netip.Addr) (src, pfx, all int) {
	s, p := sourceOf(addr)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bySrc[s], a.byPfx[p], a.held
}

// failed ends key's negotiation if it was not answered: go-nethernet
// signalled an error instead of an answer.
func (a *admission) failed(key connKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t, ok := a.byConn[key]; ok && t.state == ticketAnswering {
		a.releaseLocked(t)
	}
}

// follow reports what to do with a signal (a candidate, an error) of
// key's negotiation: pass it on now, or nothing, as it was queued until
// the offer goes on or dropped (an unknown negotiation, or too many
// queued).
func (a *admission) follow(key connKey, sig *gonn.Signal) (passOn bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.byConn[key]
	if !ok {
		return false
	}
	if t.offered {
		return true
	}
	if len(t.queued) < maxQueuedSignals {
		t.queued = append(t.queued, sig)
	}
	return false
}

// offered records that t's offer was handed on, and returns the signals
// that came before it, in order, to hand on after it.
func (t *ticket) handedOn() []*gonn.Signal {
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	t.offered = true
	q := t.queued
	t.queued = nil
	return q
}
