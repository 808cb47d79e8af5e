// Package wire holds every byte layout RakNet uses, as pure codecs: offline
// (unconnected) messages, connected control messages, addresses, u24 numbers,
// datagram headers, frames and ACK/NACK records.
//
// Encoders append to a caller buffer and return it; decoders take the bytes
// of one message, return how many bytes they consumed and an error, never
// panic and never allocate from a length read off the wire. Decoded payloads
// alias the input buffer.
//
//	var f wire.Frame
//	for len(b) > 0 {
//		n, err := f.Decode(b)
//		if err != nil {
//			return err
//		}
//		b = b[n:]
//		handle(&f)
//	}
package wire
