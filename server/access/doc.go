// Package access holds a server's allowlist and ban list, and the JSON
// files they live in: BDS's allowlist.json and a ban list of XUIDs, names
// and IP prefixes. The server asks a Lists whether a player may join
// (Admit at Login, Check again before the player takes a slot) and changes
// the lists through it; the files are read with LoadAllowlist and
// LoadBans, written on every change and polled with Changed. A file
// edited by hand since it was last read is read again before it is
// written, so the edit survives. Admit never writes: the XUIDs it learns
// (of a name-only allowlist entry or ban) are written by SaveLearned when
// Learned signals, off the login's path, and no file is written while
// the lock every login takes is held.
//
//	l := access.New(access.Config{Allowlist: true, AllowlistFile: "allowlist.json"})
//	if err := l.LoadAllowlist(); err != nil {
//		return err
//	}
//	if err := l.Admit(id, ip); err != nil {
//		return err // a *session.DisconnectError saying why
//	}
package access
