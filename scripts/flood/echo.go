package main

import (
	"time"

	"github.com/basaltmc/basalt/integration/attack"
	goraknet "github.com/sandertv/go-raknet"
)

// echoer is an attack.EchoProbe on a go-raknet connection; its reader
// ends when the connection closes.
type echoer struct{ *attack.EchoProbe }

func newEchoer(c *goraknet.Conn) echoer { return echoer{attack.NewEchoProbe(c)} }

// echo sends n numbered messages, one every interval, each waited for up
// to timeout.
func (e echoer) echo(n int, interval, timeout time.Duration) attack.EchoResult {
	return e.Run(n, interval, timeout, nil)
}
