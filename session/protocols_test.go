package session

import "testing"

func TestProtocols(t *testing.T) {
	ps := Protocols()
	if len(ps) == 0 {
		t.Fatal("no protocols")
	}
	for i := 1; i < len(ps); i++ {
		if ps[i].Protocol <= ps[i-1].Protocol {
			t.Errorf("protocols not oldest first: %d after %d", ps[i].Protocol, ps[i-1].Protocol)
		}
	}
	newest := ps[len(ps)-1]
	if newest.Protocol != CurrentProtocol || newest.Name != CurrentVersion {
		t.Errorf("newest is %+v, want CurrentProtocol %d, CurrentVersion %q", newest, CurrentProtocol, CurrentVersion)
	}
	for _, v := range ps {
		if got, ok := LookupProtocol(v.Protocol); !ok || got != v {
			t.Errorf("LookupProtocol(%d): got %+v, %v", v.Protocol, got, ok)
		}
	}
	if _, ok := LookupProtocol(2169); ok {
		t.Error("LookupProtocol(2169): known")
	}
	ps[0].Protocol = 1
	if Protocols()[0].Protocol == 1 {
		t.Error("Protocols returned its own slice")
	}
}
