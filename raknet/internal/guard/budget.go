package guard

import (
	"cmp"
	"fmt"
	"sync/atomic"
)

const (
	// DefaultBudgetTotal is the memory, in bytes, that the peers of one
	// listener may make it hold at once when BudgetConfig.Total is zero:
	// reassembly, ordering and resend queues, everything a peer's
	// datagrams or its failure to acknowledge ours keep alive.
	DefaultBudgetTotal = 128 << 20

	// DefaultHandshakeCap is what a connection may hold before its peer
	// has sent ConnectionRequest and NewIncomingConnection: those and
	// their replies are a few small datagrams, so 16 KiB is room for
	// retransmissions and nothing else.
	DefaultHandshakeCap = 16 << 10

	// DefaultPreLoginCap is what a connection may hold before the player
	// has logged in: the Bedrock Login packet carries the identity chain
	// and the client data JWT with the skin, a few hundred KiB as one
	// split message.
	DefaultPreLoginCap = 512 << 10

	// DefaultMinShare is the floor a logged-in connection can always
	// reach (see Budget): enough to keep a player's chunk and entity
	// traffic moving, if slowly, whatever the other connections do.
	DefaultMinShare = 256 << 10

	// maxBudgetTotal bounds Total so a byte count fits the 40 bits it is
	// packed into (see Budget.state).
	maxBudgetTotal = 1<<40 - 1

	// maxAccounts bounds the accounts holding memory at once so their
	// count fits the 24 bits it is packed into.
	maxAccounts = 1<<24 - 1
)

// Class is the stage of a connection, which sets how much of a Budget its
// Account may hold. The zero value is ClassHandshake, the most restricted.
type Class uint8

const (
	// ClassHandshake is a connection still in the RakNet handshake.
	ClassHandshake Class = iota
	// ClassPreLogin is a connection whose player has not logged in.
	ClassPreLogin
	// ClassLoggedIn is a connection with a logged-in player.
	ClassLoggedIn
)

func (c Class) String() string {
	switch c {
	case ClassHandshake:
		return "handshake"
	case ClassPreLogin:
		return "pre-login"
	case ClassLoggedIn:
		return "logged-in"
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// BudgetConfig configures a Budget. Zero fields take the defaults.
type BudgetConfig struct {
	// Total is the bytes all accounts together may hold;
	// DefaultBudgetTotal if zero.
	Total int64
	// Headroom is the part of Total kept for floors: no account grows
	// beyond its floor into it. Total/8 if zero.
	Headroom int64
	// MinShare is the floor of a ClassLoggedIn account; DefaultMinShare
	// if zero.
	MinShare int64
	// HandshakeCap and PreLoginCap are the most a ClassHandshake and a
	// ClassPreLogin account may hold, and their floors;
	// DefaultHandshakeCap and DefaultPreLoginCap if zero.
	HandshakeCap, PreLoginCap int64
}

// Budget is one memory budget shared by all connections of a listener.
// Each connection has an Account, and asks it before it holds memory for
// its peer; a refusal is a bool that the caller turns into backpressure (a
// fragment dropped, a send that waits).
//
// The rules, and why:
//
//   - An account's class caps it: ClassHandshake at HandshakeCap,
//     ClassPreLogin at PreLoginCap, ClassLoggedIn only by the rules below.
//     Unauthenticated peers are the cheap ones to have in numbers.
//   - An account holding anything is active and has a floor: its cap for
//     the first two classes, MinShare once logged in. The budget charges
//     an active account max(held, floor), so the floor is set aside the
//     moment an account becomes active, and the sum of the charges never
//     exceeds Total. An active account can therefore always grow to its
//     floor, whatever the others do: that is the room an honest connection
//     needs (a login, a slow but moving game), and no number of hostile
//     accounts holding memory in any order can take it.
//   - Becoming active, or raising the class, needs the floor to fit in
//     Total. Growing beyond the floor (borrowing) needs the charges to
//     stay within Total − Headroom and the account to stay within its
//     share, max(floor, Total/active). Borrowers therefore never touch the
//     Headroom (or, if more, the floors of all open accounts holding
//     nothing, up to half of Total), which stays for floors: however the
//     accounts before it
//     borrowed, a connection arriving later gets its floor as long as the
//     floors of the other latecomers leave room (with the defaults, 32
//     pre-login or 64 logged-in floors fit in the Headroom alone). A busy
//     account may use up to Total − Headroom while the others are idle
//     (holding nothing), and Total/active once there are others.
//
// What the budget cannot do is take memory back: an account over its share
// because others became active after it grew keeps what it has and is
// refused more until it drops below. That is why the floors are set
// aside, not computed from the count of accounts: a fair share alone,
// Total/active, would let an account that grew while alone keep the room
// that the next one is owed.
//
// Budget and Account are safe for concurrent use and lock-free: a Budget is
// one word (charged bytes and the count of active accounts) and an Account
// another (held bytes and class), each changed by compare-and-swap. A
// reservation charges the budget before it marks the account and a release
// marks the account first, so at every instant the bytes held by all
// accounts are at most the sum of their charges, which is at most Total.
//
// The zero Budget is not usable; call NewBudget.
type Budget struct {
	total, headroom int64
	floors          [3]int64 // by Class
	caps            [3]int64 // by Class

	// state packs the bytes charged (low 40 bits) and the count of
	// active accounts (high 24 bits).
	state atomic.Uint64
	// idle is the sum of the floors of open accounts holding nothing:
	// borrowing keeps that much free (up to half the total), so each of
	// them can still become active, however many others grew first.
	idle atomic.Int64
}

// NewBudget returns an empty Budget configured by cfg. It panics if Total
// is negative or above 1 TiB, Headroom is negative or not below Total, or
// MinShare or a cap is negative or above Total (a floor may use the
// headroom, so it only has to fit in Total).
func NewBudget(cfg BudgetConfig) *Budget {
	cfg.Total = cmp.Or(cfg.Total, DefaultBudgetTotal)
	cfg.Headroom = cmp.Or(cfg.Headroom, cfg.Total/8)
	cfg.MinShare = cmp.Or(cfg.MinShare, DefaultMinShare)
	cfg.HandshakeCap = cmp.Or(cfg.HandshakeCap, DefaultHandshakeCap)
	cfg.PreLoginCap = cmp.Or(cfg.PreLoginCap, DefaultPreLoginCap)
	switch {
	case cfg.Total < 0 || cfg.Total > maxBudgetTotal:
		panic(fmt.Sprintf("guard: budget total %d outside [1, %d]", cfg.Total, int64(maxBudgetTotal)))
	case cfg.Headroom < 0 || cfg.Headroom >= cfg.Total:
		panic(fmt.Sprintf("guard: budget headroom %d outside [0, total %d)", cfg.Headroom, cfg.Total))
	}
	for _, v := range []int64{cfg.MinShare, cfg.HandshakeCap, cfg.PreLoginCap} {
		if v < 0 || v > cfg.Total {
			panic(fmt.Sprintf("guard: budget floor %d outside [1, total %d]", v, cfg.Total))
		}
	}
	return &Budget{
		total:    cfg.Total,
		headroom: cfg.Headroom,
		floors:   [3]int64{cfg.HandshakeCap, cfg.PreLoginCap, cfg.MinShare},
		caps:     [3]int64{cfg.HandshakeCap, cfg.PreLoginCap, cfg.Total},
	}
}

// Total returns the bytes all accounts together may hold.
func (b *Budget) Total() int64 { return b.total }

// Charged returns the bytes charged against Total: what the accounts hold,
// with each active account counted at least at its floor.
func (b *Budget) Charged() int64 {
	c, _ := unpackBudget(b.state.Load())
	return c
}

// Active returns the number of accounts holding anything.
func (b *Budget) Active() int {
	_, n := unpackBudget(b.state.Load())
	return int(n)
}

// Open returns a new, empty ClassHandshake account of b.
func (b *Budget) Open() *Account {
	b.idle.Add(b.floors[ClassHandshake])
	return &Account{b: b}
}

// kept returns what borrowing leaves free: the headroom, or the floors
// of the idle accounts if more, at most half the total.
func (b *Budget) kept() int64 {
	return min(max(b.headroom, b.idle.Load()), b.total/2)
}

func packBudget(charged int64, active int64) uint64 {
	return uint64(charged) | uint64(active)<<40
}

func unpackBudget(s uint64) (charged, active int64) {
	return int64(s & maxBudgetTotal), int64(s >> 40)
}

// charge returns what an account of class c holding held bytes costs the
// budget.
func (b *Budget) charge(held int64, c Class) int64 {
	if held == 0 {
		return 0
	}
	return max(held, b.floors[c])
}

// release takes charged bytes and active accounts off the budget. Neither
// field can borrow from the other: the budget always carries at least the
// charge of every account that releases.
func (b *Budget) release(charged, active int64) {
	if charged != 0 || active != 0 {
		b.state.Add(-packBudget(charged, active))
	}
}

// Account is one connection's share of a Budget. The zero value is not
// usable; get one from Budget.Open. An Account is safe for concurrent use,
// so a connection's reader and writers may share it.
type Account struct {
	b *Budget

	// state packs the bytes held (low 40 bits), the Class (bits 40-41)
	// and whether the account is closed (bit 42).
	state atomic.Uint64
}

const (
	accountClassShift = 40
	accountClosed     = 1 << 42
)

func packAccount(held int64, c Class) uint64 {
	return uint64(held) | uint64(c)<<accountClassShift
}

func unpackAccount(s uint64) (held int64, c Class, closed bool) {
	return int64(s & maxBudgetTotal), Class(s >> accountClassShift & 3), s&accountClosed != 0
}

// Held returns the bytes the account holds.
func (a *Account) Held() int64 {
	held, _, _ := unpackAccount(a.state.Load())
	return held
}

// Class returns the account's class.
func (a *Account) Class() Class {
	_, c, _ := unpackAccount(a.state.Load())
	return c
}

// Reserve reports whether the account may hold n more bytes and, if so,
// counts them; the caller gives them back with Release. It refuses when the
// class cap, the share or the budget would be exceeded (see Budget), and
// always on a closed account. Reserve(0) is true. It panics if n is
// negative.
func (a *Account) Reserve(n int) bool {
	if n < 0 {
		panic(fmt.Sprintf("guard: Reserve(%d)", n))
	}
	if n == 0 {
		return true
	}
	b := a.b
	for {
		as := a.state.Load()
		held, c, closed := unpackAccount(as)
		next := held + int64(n)
		if closed || next > b.caps[c] {
			return false
		}
		floor := b.floors[c]
		dCharge := b.charge(next, c) - b.charge(held, c)
		var dActive int64
		if held == 0 {
			dActive = 1
		}
		if dCharge != 0 || dActive != 0 {
			bs := b.state.Load()
			charged, active := unpackBudget(bs)
			limit := b.total
			if next > floor {
				limit -= b.kept()
				if share := max(floor, b.total/max(1, active+dActive)); next > share {
					return false
				}
			}
			if charged+dCharge > limit || active+dActive > maxAccounts {
				return false
			}
			if !b.state.CompareAndSwap(bs, packBudget(charged+dCharge, active+dActive)) {
				continue
			}
		}
		if a.state.CompareAndSwap(as, packAccount(next, c)) {
			if held == 0 {
				b.idle.Add(-floor)
			}
			return true
		}
		// Another goroutine changed the account first: give back what
		// this attempt charged and start over from its new state.
		b.release(dCharge, dActive)
	}
}

// Release gives back n bytes counted by Reserve. It does nothing on a
// closed account, whose bytes were given back by Close. It panics if n is
// negative or more than the account holds.
func (a *Account) Release(n int) {
	if n < 0 {
		panic(fmt.Sprintf("guard: Release(%d)", n))
	}
	if n == 0 {
		return
	}
	b := a.b
	for {
		as := a.state.Load()
		held, c, closed := unpackAccount(as)
		if closed {
			return
		}
		if int64(n) > held {
			panic(fmt.Sprintf("guard: Release(%d) of an account holding %d", n, held))
		}
		next := held - int64(n)
		if a.state.CompareAndSwap(as, packAccount(next, c)) {
			var dActive int64
			if next == 0 {
				dActive = 1
				b.idle.Add(b.floors[c])
			}
			b.release(b.charge(held, c)-b.charge(next, c), dActive)
			return
		}
	}
}

// SetClass moves the account to class c, typically up as the connection
// passes the handshake and the login. It reports false, and changes
// nothing, if the account is closed, holds more than c's cap, or is active
// and c's higher floor does not fit in the budget; the caller may retry
// later or close the connection. It panics if c is not a Class constant.
func (a *Account) SetClass(c Class) bool {
	if c > ClassLoggedIn {
		panic(fmt.Sprintf("guard: SetClass(%v)", c))
	}
	b := a.b
	for {
		as := a.state.Load()
		held, old, closed := unpackAccount(as)
		if closed || held > b.caps[c] {
			return false
		}
		dCharge := b.charge(held, c) - b.charge(held, old)
		if dCharge > 0 {
			bs := b.state.Load()
			charged, active := unpackBudget(bs)
			if charged+dCharge > b.total {
				return false
			}
			if !b.state.CompareAndSwap(bs, packBudget(charged+dCharge, active)) {
				continue
			}
		}
		if a.state.CompareAndSwap(as, packAccount(held, c)) {
			if dCharge < 0 {
				b.release(-dCharge, 0)
			}
			if held == 0 {
				b.idle.Add(b.floors[c] - b.floors[old])
			}
			return true
		}
		if dCharge > 0 {
			b.release(dCharge, 0)
		}
	}
}

// Close gives back everything the account holds and refuses it any more.
// Closing twice does nothing.
func (a *Account) Close() {
	b := a.b
	for {
		as := a.state.Load()
		held, c, closed := unpackAccount(as)
		if closed {
			return
		}
		if a.state.CompareAndSwap(as, packAccount(0, c)|accountClosed) {
			var dActive int64
			if held > 0 {
				dActive = 1
			} else {
				b.idle.Add(-b.floors[c])
			}
			b.release(b.charge(held, c), dActive)
			return
		}
	}
}
