package raknet

// MaxSockets is the most UDP sockets a listener opens on one address
// (ListenConfig.Sockets above it means this many), exported so that
// configuration can state the bound it checks.
const MaxSockets = maxSockets
