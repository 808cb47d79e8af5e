package guard

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

const (
	kib = 1 << 10
	mib = 1 << 20
)

// fill reserves step bytes at a time until a refusal or limit bytes, and
// returns what it got.
func fill(a *Account, step, limit int64) int64 {
	var got int64
	for got+step <= limit && a.Reserve(int(step)) {
		got += step
	}
	return got
}

// mustReserve reserves n bytes in 4 KiB steps and fails the test on a
// refusal.
func mustReserve(t *testing.T, a *Account, n int64, what string) {
	t.Helper()
	if got := fill(a, 4*kib, n); got != n {
		t.Fatalf("%s: reserved %d of %d bytes, want all", what, got, n)
	}
}

func TestBudgetClassCaps(t *testing.T) {
	b := NewBudget(BudgetConfig{})
	a := b.Open()
	if got := a.Class(); got != ClassHandshake {
		t.Fatalf("class of a new account: got %v, want %v", got, ClassHandshake)
	}
	steps := []struct {
		name  string
		class Class
		n     int
		want  bool
	}{
		{"handshake up to its cap", ClassHandshake, DefaultHandshakeCap, true},
		{"handshake beyond its cap", ClassHandshake, 1, false},
		{"pre-login up to its cap", ClassPreLogin, DefaultPreLoginCap - DefaultHandshakeCap, true},
		{"pre-login beyond its cap", ClassPreLogin, 1, false},
		{"logged in beyond the pre-login cap", ClassLoggedIn, 4 * mib, true},
		{"logged in up to the borrowing limit", ClassLoggedIn, DefaultBudgetTotal*7/8 - DefaultPreLoginCap - 4*mib, true},
		{"logged in beyond the borrowing limit", ClassLoggedIn, 1, false},
	}
	for _, s := range steps {
		if s.class != a.Class() && !a.SetClass(s.class) {
			t.Fatalf("%s: SetClass(%v): got false, want true", s.name, s.class)
		}
		if got := a.Reserve(s.n); got != s.want {
			t.Errorf("%s: Reserve(%d): got %v, want %v", s.name, s.n, got, s.want)
		}
	}
	if got, want := b.Charged(), int64(DefaultBudgetTotal*7/8); got != want {
		t.Errorf("Charged: got %d, want %d", got, want)
	}
}

// TestBudgetHostileCannotStarveHonest has hostile connections take all
// they can, in several orders, and then checks that an honest one still
// logs in (its whole pre-login cap) and reaches its logged-in floor.
func TestBudgetHostileCannotStarveHonest(t *testing.T) {
	tests := []struct {
		name    string
		hostile int
		class   Class
		// roundRobin grows the hostile accounts a step each in turn;
		// otherwise each takes all it can before the next arrives.
		roundRobin bool
	}{
		{"20 logged in, one after another", 20, ClassLoggedIn, false},
		{"20 logged in, in turn", 20, ClassLoggedIn, true},
		{"20 pre-login, one after another", 20, ClassPreLogin, false},
		{"60 logged in, one after another", 60, ClassLoggedIn, false},
		{"200 handshakes", 200, ClassHandshake, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBudget(BudgetConfig{})
			hostile := make([]*Account, tc.hostile)
			for i := range hostile {
				hostile[i] = b.Open()
				if !hostile[i].SetClass(tc.class) {
					t.Fatalf("hostile %d: SetClass: got false, want true", i)
				}
				if !tc.roundRobin {
					fill(hostile[i], 4*kib, DefaultBudgetTotal)
				}
			}
			for tc.roundRobin {
				grew := false
				for _, a := range hostile {
					grew = a.Reserve(4*kib) || grew
				}
				if !grew {
					break
				}
			}
			var took int64
			for _, a := range hostile {
				took += a.Held()
			}
			if took == 0 {
				t.Fatal("hostile accounts took nothing")
			}

			honest := b.Open()
			mustReserve(t, honest, DefaultHandshakeCap, "honest handshake")
			if !honest.SetClass(ClassPreLogin) {
				t.Fatal("honest SetClass(ClassPreLogin): got false, want true")
			}
			mustReserve(t, honest, DefaultPreLoginCap-DefaultHandshakeCap, "honest login")
			if !honest.SetClass(ClassLoggedIn) {
				t.Fatal("honest SetClass(ClassLoggedIn): got false, want true")
			}
			honest.Release(DefaultPreLoginCap - 4*kib) // the login is handled
			mustReserve(t, honest, DefaultMinShare-4*kib, "honest game traffic")
			if got := b.Charged(); got > DefaultBudgetTotal {
				t.Errorf("Charged: got %d, want at most %d", got, DefaultBudgetTotal)
			}
		})
	}
}

// TestBudgetLatecomers checks the headroom's promise exactly: after one
// account has borrowed all it may, Headroom/MinShare newcomers get their
// floor and the next does not.
func TestBudgetLatecomers(t *testing.T) {
	b := NewBudget(BudgetConfig{Total: 64 * mib, Headroom: 8 * mib, MinShare: mib})
	big := b.Open()
	big.SetClass(ClassLoggedIn)
	if got := fill(big, mib, 64*mib); got != 56*mib {
		t.Fatalf("lone borrower: got %d, want %d", got, 56*mib)
	}
	for i := range 8 {
		a := b.Open()
		a.SetClass(ClassLoggedIn)
		if !a.Reserve(mib) {
			t.Fatalf("latecomer %d: Reserve(floor): got false, want true", i)
		}
	}
	last := b.Open()
	last.SetClass(ClassLoggedIn)
	if last.Reserve(1) {
		t.Errorf("latecomer 8: Reserve(1): got true, want false")
	}
	// The borrower's room comes back to the others as it drains.
	big.Release(mib)
	if !last.Reserve(1) {
		t.Errorf("latecomer 8 after the borrower released: got false, want true")
	}
}

// TestBudgetShare checks that a busy account may use the room of idle ones
// and is held to Total/active when the others hold memory too.
func TestBudgetShare(t *testing.T) {
	b := NewBudget(BudgetConfig{Total: 64 * mib, Headroom: 8 * mib, MinShare: mib})
	accts := make([]*Account, 4)
	for i := range accts {
		accts[i] = b.Open()
		accts[i].SetClass(ClassLoggedIn)
	}
	busy := accts[0]
	if got := fill(busy, mib, 64*mib); got != 56*mib {
		t.Fatalf("busy account with three idle: got %d, want %d", got, 56*mib)
	}
	busy.Release(56 * mib)
	for _, a := range accts[1:] {
		if !a.Reserve(1) {
			t.Fatal("Reserve(1) of another account: got false, want true")
		}
	}
	if got := fill(busy, mib, 64*mib); got != 16*mib {
		t.Errorf("busy account with three active: got %d, want Total/4 = %d", got, 16*mib)
	}
	// Others going idle raises the share at once.
	accts[3].Release(1)
	if got := fill(busy, mib, 64*mib); got != 5*mib {
		t.Errorf("more after one went idle: got %d, want Total/3 - 16 MiB = %d", got, 5*mib)
	}
}

// TestBudgetOverShare checks that an account that grew alone keeps what it
// has when others arrive, cannot grow until it is below its share, and
// that the others still reach their floors.
func TestBudgetOverShare(t *testing.T) {
	b := NewBudget(BudgetConfig{Total: 64 * mib, Headroom: 8 * mib, MinShare: mib})
	a, c := b.Open(), b.Open()
	a.SetClass(ClassLoggedIn)
	c.SetClass(ClassLoggedIn)
	fill(a, mib, 64*mib)
	mustReserve(t, c, mib, "second account's floor")
	if a.Reserve(1) {
		t.Errorf("over-share account Reserve(1): got true, want false")
	}
	a.Release(26 * mib) // 30 MiB left, share is 32 MiB
	if got := fill(a, mib, 64*mib); got != 2*mib {
		t.Errorf("after draining below the share: got %d, want %d", got, 2*mib)
	}
}

// TestBudgetFloorAlwaysReachable fills the budget to the last byte with
// floors and borrowing, and checks an active account still grows to its
// floor.
func TestBudgetFloorAlwaysReachable(t *testing.T) {
	b := NewBudget(BudgetConfig{Total: 16 * mib, Headroom: 2 * mib, MinShare: mib})
	small := b.Open()
	small.SetClass(ClassLoggedIn)
	if !small.Reserve(1) {
		t.Fatal("Reserve(1): got false, want true")
	}
	big := b.Open()
	big.SetClass(ClassLoggedIn)
	fill(big, 64*kib, 16*mib)
	for {
		a := b.Open()
		a.SetClass(ClassLoggedIn)
		if !a.Reserve(1) {
			break
		}
	}
	if got := b.Charged(); got != 16*mib {
		t.Fatalf("Charged: got %d, want the whole %d", got, 16*mib)
	}
	if !small.Reserve(mib - 1) {
		t.Errorf("Reserve up to the floor in a full budget: got false, want true")
	}
	if small.Reserve(1) {
		t.Errorf("Reserve beyond the floor in a full budget: got true, want false")
	}
}

func TestBudgetSetClass(t *testing.T) {
	b := NewBudget(BudgetConfig{Total: 4 * mib, Headroom: mib, MinShare: mib, HandshakeCap: 16 * kib, PreLoginCap: 2 * mib})
	a := b.Open()
	if !a.SetClass(ClassPreLogin) || !a.Reserve(1) {
		t.Fatal("setup: SetClass and Reserve: got false, want true")
	}
	if got := b.Charged(); got != 2*mib {
		t.Fatalf("Charged of a pre-login account: got %d, want its floor %d", got, 2*mib)
	}
	if !a.SetClass(ClassLoggedIn) {
		t.Fatal("SetClass(ClassLoggedIn): got false, want true")
	}
	if got := b.Charged(); got != mib {
		t.Errorf("Charged after the floor fell: got %d, want %d", got, mib)
	}
	if !a.Reserve(32*kib) || a.SetClass(ClassHandshake) {
		t.Errorf("SetClass(ClassHandshake) holding more than its cap: got true, want false")
	}
	if got := a.Class(); got != ClassLoggedIn {
		t.Errorf("class after a refused SetClass: got %v, want %v", got, ClassLoggedIn)
	}
	// Take the rest with floors, then a handshake account cannot move up
	// to a floor that does not fit.
	for _, c := range []Class{ClassPreLogin, ClassHandshake} {
		x := b.Open()
		x.SetClass(c)
		if !x.Reserve(1) {
			t.Fatalf("Reserve(1) as %v: got false, want true", c)
		}
	}
	h := b.Open()
	if !h.Reserve(1) {
		t.Fatal("handshake Reserve(1): got false, want true")
	}
	if h.SetClass(ClassPreLogin) {
		t.Errorf("SetClass(ClassPreLogin) with no room for its floor: got true, want false")
	}
	if got := h.Class(); got != ClassHandshake {
		t.Errorf("class after a refused SetClass: got %v, want %v", got, ClassHandshake)
	}
	idle := b.Open()
	if !idle.SetClass(ClassPreLogin) {
		t.Errorf("SetClass of an idle account: got false, want true (it holds no floor)")
	}
}

func TestBudgetClose(t *testing.T) {
	b := NewBudget(BudgetConfig{})
	a := b.Open()
	a.SetClass(ClassLoggedIn)
	mustReserve(t, a, 3*mib, "setup")
	a.Close()
	if got, n := b.Charged(), b.Active(); got != 0 || n != 0 {
		t.Errorf("after Close: got Charged %d and Active %d, want 0 and 0", got, n)
	}
	if a.Reserve(1) {
		t.Errorf("Reserve on a closed account: got true, want false")
	}
	if a.SetClass(ClassPreLogin) {
		t.Errorf("SetClass on a closed account: got true, want false")
	}
	a.Release(3 * mib) // a late release from a writer: ignored
	a.Close()
	if got := b.Charged(); got != 0 {
		t.Errorf("Charged after a late Release and a second Close: got %d, want 0", got)
	}
}

func TestBudgetPanics(t *testing.T) {
	b := NewBudget(BudgetConfig{})
	tests := []struct {
		name string
		f    func()
	}{
		{"Reserve negative", func() { b.Open().Reserve(-1) }},
		{"Release negative", func() { b.Open().Release(-1) }},
		{"Release more than held", func() { a := b.Open(); a.Reserve(10); a.Release(11) }},
		{"SetClass unknown", func() { b.Open().SetClass(ClassLoggedIn + 1) }},
		{"Total negative", func() { NewBudget(BudgetConfig{Total: -1}) }},
		{"Total above 1 TiB", func() { NewBudget(BudgetConfig{Total: 1 << 40}) }},
		{"Headroom of Total", func() { NewBudget(BudgetConfig{Total: mib, Headroom: mib}) }},
		{"MinShare above Total", func() { NewBudget(BudgetConfig{Total: mib, MinShare: 2 * mib}) }},
		{"cap negative", func() { NewBudget(BudgetConfig{PreLoginCap: -1}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("got no panic, want one")
				}
			}()
			tc.f()
		})
	}
}

func TestClassString(t *testing.T) {
	for c, want := range map[Class]string{ClassHandshake: "handshake", ClassPreLogin: "pre-login", ClassLoggedIn: "logged-in", 7: "Class(7)"} {
		if got := c.String(); got != want {
			t.Errorf("Class(%d).String(): got %q, want %q", uint8(c), got, want)
		}
	}
}

// budgetRun applies ops, three bytes each (operation and account, then a
// size), to a small budget of eight accounts, checking every invariant of
// Budget after each. FuzzBudget and TestBudgetProperties feed it.
func budgetRun(t *testing.T, ops []byte) {
	t.Helper()
	b := NewBudget(BudgetConfig{Total: 64 * kib, Headroom: 8 * kib, MinShare: 4 * kib, HandshakeCap: kib, PreLoginCap: 8 * kib})
	accts := make([]*Account, 8)
	for i := range accts {
		accts[i] = b.Open()
	}
	for ; len(ops) >= 3; ops = ops[3:] {
		a := accts[ops[0]&7]
		n := int(ops[1])<<8 | int(ops[2])
		held, c, closed := unpackAccount(a.state.Load())
		switch op := ops[0] >> 3 % 8; op {
		case 0, 1, 2: // reserve, mostly small
			if op < 2 {
				n %= 2 * kib
			}
			ok := a.Reserve(n)
			next := held + int64(n)
			// Reserve(0) takes nothing: an account already above the
			// share (it grew while fewer were active, or under a class
			// with a larger floor) borrows nothing by it.
			if ok && !closed && n > 0 && next > b.floors[c] {
				charged, active := unpackBudget(b.state.Load())
				if charged > b.total-b.headroom {
					t.Fatalf("borrowing Reserve(%d) left %d charged, above Total-Headroom %d", n, charged, b.total-b.headroom)
				}
				if share := max(b.floors[c], b.total/active); next > share {
					t.Fatalf("borrowing Reserve(%d) left %d held, above the share %d", n, next, share)
				}
			}
			if !ok && !closed && held > 0 && next <= b.floors[c] {
				t.Fatalf("Reserve(%d) within the floor %d of an active %v account holding %d: got false, want true", n, b.floors[c], c, held)
			}
		case 3, 4: // release
			if held > 0 {
				a.Release(n % int(held+1))
			}
		case 5:
			c := Class(n % 3)
			ok := a.SetClass(c)
			if got := a.Class(); ok && got != c {
				t.Fatalf("SetClass(%v) returned true, class is %v", c, got)
			}
		case 6:
			if n%8 == 0 {
				a.Close()
				accts[ops[0]&7] = b.Open()
			}
		case 7: // grow to the floor: must always succeed
			if held > 0 && !closed && held < b.floors[c] && !a.Reserve(int(b.floors[c]-held)) {
				t.Fatalf("Reserve up to the floor of an active %v account holding %d: got false, want true", c, held)
			}
		}
		checkBudget(t, b, accts)
	}
}

// checkBudget checks, on a quiet budget, that the budget's word agrees
// with its accounts, each account keeps its cap and all of them together
// hold at most Total.
func checkBudget(t *testing.T, b *Budget, accts []*Account) {
	t.Helper()
	var held, charge, active int64
	for i, a := range accts {
		h, c, closed := unpackAccount(a.state.Load())
		if closed && h != 0 {
			t.Fatalf("closed account %d holds %d", i, h)
		}
		if h > b.caps[c] {
			t.Fatalf("%v account %d holds %d, above its cap %d", c, i, h, b.caps[c])
		}
		held += h
		charge += b.charge(h, c)
		if h > 0 {
			active++
		}
	}
	charged, n := unpackBudget(b.state.Load())
	if held > b.total || charged > b.total {
		t.Fatalf("held %d and charged %d, want both at most Total %d", held, charged, b.total)
	}
	if charged != charge || n != active {
		t.Fatalf("budget says %d charged and %d active, accounts say %d and %d", charged, n, charge, active)
	}
}

// TestBudgetProperties runs budgetRun over seeded random operation
// sequences.
func TestBudgetProperties(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 0x6275646765740a))
		ops := make([]byte, 3*500)
		for i := range ops {
			ops[i] = byte(r.Uint32())
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) { budgetRun(t, ops) })
	}
}

func FuzzBudget(f *testing.F) {
	f.Add([]byte{0, 0, 100, 1, 0, 200, 40, 0, 1, 1, 8, 0})
	f.Add([]byte{40, 0, 2, 0, 2, 0, 16, 255, 255, 56, 0, 0, 24, 0, 10})
	f.Add([]byte{41, 0, 2, 42, 0, 2, 17, 250, 0, 18, 250, 0, 43, 0, 1, 19, 250, 0, 59, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) { budgetRun(t, ops) })
}

// TestBudgetConcurrent has goroutines reserve, hold, release, reclass and
// close at random on shared accounts while a watcher checks that the charge
// never exceeds Total and a guarded account always reaches its floor (run
// with -race). At the end the budget must agree with its accounts exactly.
func TestBudgetConcurrent(t *testing.T) {
	b := NewBudget(BudgetConfig{Total: 4 * mib, Headroom: 512 * kib, MinShare: 64 * kib, HandshakeCap: 4 * kib, PreLoginCap: 128 * kib})
	const workers = 4
	var mu sync.Mutex // guards the slice, not the accounts
	accts := make([]*Account, 16)
	for i := range accts {
		accts[i] = b.Open()
	}
	pick := func(r *rand.Rand) *Account {
		mu.Lock()
		defer mu.Unlock()
		return accts[r.IntN(len(accts))]
	}
	guarded := b.Open()
	guarded.SetClass(ClassLoggedIn)
	if !guarded.Reserve(1) {
		t.Fatal("guarded Reserve(1): got false, want true")
	}

	var stop atomic.Bool
	var bg, work sync.WaitGroup
	errs := make(chan string, 2)
	bg.Go(func() {
		for !stop.Load() {
			if c := b.Charged(); c > b.total {
				errs <- fmt.Sprintf("charged %d, above Total %d", c, b.total)
				return
			}
		}
	})
	bg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			n := 64*kib - 1 - i%1000
			if !guarded.Reserve(n) {
				errs <- "guarded account refused within its floor"
				return
			}
			guarded.Release(n)
		}
	})
	for w := range workers {
		work.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 99))
			type hold struct {
				a *Account
				n int
			}
			var holds []hold
			for range 20_000 {
				a := pick(r)
				switch r.IntN(10) {
				case 0, 1, 2:
					if n := r.IntN(32 * kib); a.Reserve(n) {
						holds = append(holds, hold{a, n})
					}
				case 3, 4:
					if len(holds) > 0 {
						i := r.IntN(len(holds))
						holds[i].a.Release(holds[i].n)
						holds[i] = holds[len(holds)-1]
						holds = holds[:len(holds)-1]
					}
				case 5, 6:
					if n := r.IntN(256 * kib); a.Reserve(n) {
						a.Release(n)
					}
				case 7, 8:
					a.SetClass(Class(r.IntN(3)))
				case 9:
					if r.IntN(20) == 0 {
						mu.Lock()
						i := r.IntN(len(accts))
						old := accts[i]
						accts[i] = b.Open()
						mu.Unlock()
						old.Close()
					}
				}
			}
			for _, h := range holds {
				h.a.Release(h.n)
			}
		})
	}
	work.Wait()
	stop.Store(true)
	bg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	guarded.Release(1)
	checkBudget(t, b, append(accts, guarded))
	if got, n := b.Charged(), b.Active(); got != 0 || n != 0 {
		t.Errorf("after every reservation was released: got Charged %d and Active %d, want 0 and 0", got, n)
	}
}

// TestBudgetConcurrentOneAccount races goroutines on one account, each
// reservation crossing the floor so it changes both words: whenever the
// account's word moves between the two, the attempt must give back what it
// charged, or the budget leaks.
func TestBudgetConcurrentOneAccount(t *testing.T) {
	b := NewBudget(BudgetConfig{Total: 64 * mib, Headroom: 8 * mib, MinShare: 64 * kib})
	a := b.Open()
	a.SetClass(ClassLoggedIn)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 20_000 {
				n := 40*kib + (i*7+g)%(40*kib)
				if a.Reserve(n) {
					a.Release(n)
				}
			}
		})
	}
	wg.Wait()
	if got, n := b.Charged(), b.Active(); got != 0 || n != 0 || a.Held() != 0 {
		t.Errorf("after every reservation was released: got Charged %d, Active %d, Held %d, want 0, 0, 0", got, n, a.Held())
	}
}

func TestBudgetAllocs(t *testing.T) {
	b := NewBudget(BudgetConfig{})
	a, c := b.Open(), b.Open()
	a.SetClass(ClassLoggedIn)
	n := testing.AllocsPerRun(1000, func() {
		a.Reserve(4 * kib)
		a.Reserve(mib)
		c.Reserve(kib)
		a.Release(mib + 4*kib)
		c.Release(kib)
	})
	if n != 0 {
		t.Errorf("allocations per Reserve and Release: got %v, want 0", n)
	}
}

// BenchmarkBudget measures a reservation and its release within the floor
// of an active account (the account's word only), the same crossing the
// floor (the budget's word too), and the second case from every core.
func BenchmarkBudget(b *testing.B) {
	b.Run("floor", func(b *testing.B) {
		bu := NewBudget(BudgetConfig{})
		a := bu.Open()
		a.Reserve(1)
		b.ReportAllocs()
		for b.Loop() {
			a.Reserve(1500)
			a.Release(1500)
		}
	})
	b.Run("borrow", func(b *testing.B) {
		bu := NewBudget(BudgetConfig{})
		a := bu.Open()
		a.SetClass(ClassLoggedIn)
		a.Reserve(DefaultMinShare)
		b.ReportAllocs()
		for b.Loop() {
			a.Reserve(1500)
			a.Release(1500)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		bu := NewBudget(BudgetConfig{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			a := bu.Open()
			a.SetClass(ClassLoggedIn)
			a.Reserve(DefaultMinShare)
			for pb.Next() {
				a.Reserve(1500)
				a.Release(1500)
			}
		})
	})
}

// However many accounts grow first, and in whatever order, an account
// that has held nothing yet can still take its floor: borrowing leaves the
// floors of the idle accounts free.
func TestBudgetIdleAccountsKeepTheirFloor(t *testing.T) {
	b := NewBudget(BudgetConfig{Total: 32 << 20})
	var hostile []*Account
	for range 50 {
		a := b.Open()
		if !a.SetClass(ClassLoggedIn) {
			t.Fatal("SetClass refused on an empty account")
		}
		hostile = append(hostile, a)
	}
	honest := b.Open()
	if !honest.SetClass(ClassLoggedIn) {
		t.Fatal("SetClass refused on an empty account")
	}
	// Ten grow as far as they can, then the other forty each take a byte
	// (and with it their floor): the floors of the accounts that were
	// idle while the ten grew must still be there.
	for _, a := range hostile[:10] {
		for a.Reserve(64 << 10) {
		}
	}
	for _, a := range hostile[10:] {
		if !a.Reserve(1) {
			t.Errorf("an idle account could not take its floor after ten others grew (charged %d of %d)", b.Charged(), b.Total())
			break
		}
	}
	if c := b.Charged(); c > b.Total() {
		t.Fatalf("charged %d of %d", c, b.Total())
	}
	if !honest.Reserve(DefaultMinShare) {
		t.Errorf("honest account: its %d-byte floor refused after 50 others grew (charged %d of %d)", DefaultMinShare, b.Charged(), b.Total())
	}
	for _, a := range hostile {
		a.Close()
	}
	honest.Close()
	if c := b.Charged(); c != 0 {
		t.Errorf("after closing all: %d charged, want 0", c)
	}
	if n := b.idle.Load(); n != 0 {
		t.Errorf("after closing all: idle floors %d, want 0", n)
	}
}
