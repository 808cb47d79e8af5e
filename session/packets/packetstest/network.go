package packetstest

import (
	"context"
	"errors"
	"net"

	"github.com/sandertv/gophertunnel/minecraft"
)

// errNoPing answers gophertunnel's ping: an in-memory network has no
// server list.
var errNoPing = errors.New("packetstest: no ping over an in-memory network")

// Network is a gophertunnel minecraft.Network over Pipes, for
// minecraft.Dialer.DialContextNetwork: each dial makes a Pipe, hands the
// server End to Accept and gives the client End to gophertunnel. The
// address is ignored. A Network is safe for concurrent use if Accept is.
type Network struct {
	// Accept serves the server end of each dial, typically by starting a
	// session over it on a goroutine of its own. It must not block.
	Accept func(server *End)
}

var _ minecraft.Network = Network{}

// DialContext makes a Pipe and hands its server End to Accept.
func (n Network) DialContext(ctx context.Context, _ string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	server, client := Pipe()
	n.Accept(server)
	return client, nil
}

// PingContext fails: gophertunnel's dialer then keeps the address as given.
func (Network) PingContext(context.Context, string) ([]byte, error) {
	return nil, errNoPing
}

// Listen fails: the server side of a Pipe is handed to Accept, not listened
// for.
func (Network) Listen(string) (minecraft.NetworkListener, error) {
	return nil, errors.New("packetstest: Listen is not supported; use Accept")
}
