//go:build !linux

package main

import (
	"errors"
	"os"
	"time"
)

var errNoProc = errors.New("needs Linux /proc")

func procCPU(int) (time.Duration, error) { return 0, errNoProc }

func procRSS(int) (int64, error) { return 0, errNoProc }

func raiseNoFile() (uint64, error) { return 0, errNoProc }

func notifyStats(chan<- os.Signal) {}

func isStatsSignal(os.Signal) bool { return false }

func terminate(p *os.Process) error { return p.Signal(os.Interrupt) }

type udpCounters struct {
	InDatagrams, InErrors, RcvbufErrors, MemErrors, OutDatagrams int64
}

func readUDPCounters() (udpCounters, error) { return udpCounters{}, errNoProc }

func socketDrops(uint16) (int64, error) { return 0, errNoProc }
