// Package medic moves an application's output from a compute site to a
// storage site as metadata and regenerates it there: the ParaMEDIC
// framework (Balaji, Feng, Lin: "Semantics-based Distributed I/O with the
// ParaMEDIC Framework").
//
// Three parts behind one API:
//
//   - Application plugins (Plugin, Register, Lookup): at the compute site
//     a plugin turns an output into metadata (Encode); at the storage site
//     it turns the metadata back into the output (Decode), with local
//     resources (Env.Resources: a database replica, a program). "raw"
//     (built in) ships the bytes as they are, the baseline; "zstd"
//     (medic/plugin/zstd) is the generic fallback for any output;
//     application plugins live under medic/plugin/.
//   - Data tools: the container (NewWriter, NewReader, Encode, Decode)
//     seals the metadata in authenticated chunks, encrypted with
//     XChaCha20-Poly1305 or AES-256-GCM under a key file, or at least
//     checksummed; the regenerated output is checked against the
//     original's SHA-256 before anything is kept.
//   - Communication: Server (the storage-site daemon behind `pario medic
//     serve`) and Send / SendFile (the compute site, `pario medic send`):
//     authenticated TCP, optionally TLS, resumable.
//
// The cost model (medic/cost) predicts A = T + f(x) + x/B + g(x) against
// A' = T + D/B, with f, g and x measured per plugin by Calibrate.
//
// # Container format, version 1
//
// All integers little endian unless said otherwise.
//
//	magic     8 bytes  "PMEDIC\x00\x1a"
//	version   uint8    1
//	hdrLen    uint32   length of the header body (at most 1 MiB)
//	header    hdrLen bytes, in wire.Enc encoding:
//	            cipher     uint8    0 none, 1 XChaCha20-Poly1305, 2 AES-256-GCM
//	            plugin     string   plugin name
//	            size       int64    size of the original output
//	            digest     blob     SHA-256 of the original output (32 bytes)
//	            params     uvarint count, then key, value strings (sorted by key)
//	            chunkSize  uint32   plaintext bytes per chunk (at most 16 MiB)
//	            salt       blob     16 random bytes
//	            keyID      blob     8 bytes (HMAC-SHA256(key, "pario-medic key id v1")),
//	                                empty without a cipher
//	chunks    one or more:
//	            word       uint32   payload length | 1<<31 on the last chunk
//	            payload    sealed chunk
//
// Let H = SHA-256(header body) and, for chunk i (from 0) with last flag L,
// AD_i = H || uint64be(i) || uint8(L).
//
// With a cipher, the chunk key is HKDF-SHA256(key file's 32 bytes, salt,
// "pario-medic container v1 <cipher name>"), the nonce is the first
// NonceSize-8 bytes of the salt followed by uint64be(i), and the payload is
// AEAD.Seal(plaintext, AD_i): the header is authenticated with every chunk,
// chunks cannot be reordered, dropped or replayed from another container,
// and a missing last chunk (truncation) is detected. A key whose keyID
// differs is reported as the wrong key before any chunk is read.
//
// Without a cipher, the payload is plaintext || T_i with
// T_i = SHA-256("pario-medic chunk v1\x00" || T_{i-1} || uint64be(i) ||
// uint8(L) || plaintext) and T_{-1} = H: a hash chain over the header and
// every chunk, so corruption, reordering and truncation are detected (not
// forgery: an attacker can recompute the chain; use a cipher for that).
//
// Decoding stops at the first chunk that fails, with a ChunkError naming
// its index. Bytes after the last chunk are an error.
//
// # Transfer protocol, version 2
//
// One TCP connection (optionally TLS 1.3) carries pario wire frames
// (wire.AppendFrame: 28-byte header with op, flags, CRC32C of header and
// payload; arguments in wire.Enc). Errors are answered as frames with
// wire.FlagError carrying (uint8 kind, string message); kinds tell missing
// resources, integrity failures, corruption in transit and authentication
// failures apart. A data frame that fails its checksum is answered that
// way (kind 5, ErrTransit) before the receiver closes the connection.
//
//	s->c Hello    version, receiver name, 32-byte nonce Ns
//	c->s Auth     32-byte nonce Nc, HMAC(Ka, "pario-medic-auth-v1 client\0" || Ns || Nc)
//	s->c Auth     HMAC(Ka, "... server\0" || Ns || Nc)         (mutual proof)
//	c->s Offer    transfer id (SHA-256 of the container), size, destination name, window,
//	              ack every (uint32: bytes between acknowledgements; version 2)
//	s->c Offer    offset: bytes of this container already staged
//	c->s Data*    offset; data section (at most ack every bytes)
//	s->c Ack*     bytes staged (every min(ack every, window/4) bytes, ack every
//	              taken between 4 KiB and 32 KiB, 32 KiB if 0); the sender
//	              keeps at most window bytes unacknowledged
//	c->s Done
//	s->c Done     stored path, size, plugin, verify/regenerate/commit times
//
// The sender asks for an acknowledgement every 1/16 of the container
// (AckEvery: 4 KiB for a container of 64 KiB or less, 32 KiB from 512
// KiB), so that a send --auto bounds and measures the link from the first
// few percent of any container. Version 1 acknowledged every 32 KiB and
// had no ack every in the offer; a sender and a receiver of different
// versions refuse each other at the hello ("receiver speaks medic
// protocol 1, we speak 2").
//
// Ka = HKDF-SHA256(key, nil, "pario-medic auth v1"). Frames before the
// handshake completes are limited to 4 KiB. Probe/ProbeEnd (bulk data,
// answered with the byte count) and Ping measure the link for the cost
// model.
//
// The receiver stages an upload under STAGING/<id>.part and keeps it when
// the connection breaks, so that the next Send of the same container
// resumes at its end (the sender keeps the container in its spool until
// the receiver has stored the output). Beside it, STAGING/<id>.sum holds
// the offset acknowledged last and the SHA-256 state of the bytes received
// over the network up to there; a resume starts from it (cutting off what
// was never acknowledged). After Done the receiver checks that hash
// against the id (a mismatch: corrupted in transit), then the staged
// bytes (a mismatch: corrupted in staging), verifies every chunk, regenerates into a temporary
// file next to the destination (".medic-NAME.*.tmp", or a temporary pario
// path), checks size and SHA-256 against the header, syncs and renames it
// into place. On any failure the temporary is removed and the sender gets
// the error; the staged upload is dropped, except when the storage site
// lacks a resource (ErrMissing), so that a re-send after the operator has
// fixed it needs no transfer. The regeneration runs in a flock-held work
// directory STAGING/decode-* that notes the temporary output; a receiver
// starting later removes those whose owner died (workdir.go).
package medic
