//! The messages of one receive buffer (`struct nlmsghdr` framing, through
//! `netlink_packet_core::NetlinkBuffer`): data replies, `NLMSG_DONE` with the dump's
//! result, `NLMSG_ERROR` with an errno or an acknowledgement.

use super::nldev::WireError;
use netlink_packet_core::{
    ErrorBuffer, NetlinkBuffer, NLMSG_DONE, NLMSG_ERROR, NLMSG_NOOP, NLMSG_OVERRUN,
};

/// One message of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply<'a> {
    /// `nlmsg_seq`: the request it answers.
    pub sequence: u32,
    /// `nlmsg_flags` (`NLM_F_MULTI`, `NLM_F_DUMP_INTR`).
    pub flags: u16,
    /// What it says.
    pub body: Body<'a>,
}

/// What a message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body<'a> {
    /// A data message: its type and attributes.
    Data {
        /// `nlmsg_type` (`RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op)`).
        message_type: u16,
        /// The attributes.
        payload: &'a [u8],
    },
    /// `NLMSG_DONE`: the end of a dump, with its result (0, or a negative errno when the
    /// dump failed, as for an unknown device index).
    Done(i32),
    /// `NLMSG_ERROR` with a negative errno.
    Error(i32),
    /// `NLMSG_ERROR` with 0: an acknowledgement.
    Ack,
    /// `NLMSG_NOOP` or `NLMSG_OVERRUN`: nothing to read.
    Noop,
}

/// `NLMSG_HDRLEN`: `struct nlmsghdr` is 16 bytes (u32 length, u16 type, u16 flags, u32
/// sequence, u32 port).
const NLMSG_HDRLEN: usize = 16;

/// `NLM_F_DUMP_INTR`: the dump changed while it was read (a resource came or went); the
/// reader starts it again.
pub const NLM_F_DUMP_INTR: u16 = 16;

/// Splits a receive buffer into its messages. `at` names the buffer in errors; a message
/// whose header does not fit is an error naming its position. Never panics.
pub fn replies<'a>(buffer: &'a [u8], at: &str) -> Result<Vec<Reply<'a>>, WireError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buffer.len() {
        let here = format!("{at}, message {} at byte {pos}", out.len() + 1);
        let bad = |reason: String| WireError::Malformed {
            at: here.clone(),
            reason,
        };
        let msg = NetlinkBuffer::new_checked(&buffer[pos..]).map_err(|e| bad(e.to_string()))?;
        let length = msg.length() as usize;
        let payload = msg.payload();
        let body = match msg.message_type() {
            NLMSG_DONE => Body::Done(match payload.get(..4) {
                Some(code) => i32::from_ne_bytes(code.try_into().expect("4 bytes")),
                // The kernel allows an empty NLMSG_DONE.
                None => 0,
            }),
            NLMSG_ERROR => {
                let e = ErrorBuffer::new_checked(payload).map_err(|e| bad(e.to_string()))?;
                match e.code() {
                    Some(code) => Body::Error(code.get()),
                    None => Body::Ack,
                }
            }
            NLMSG_NOOP | NLMSG_OVERRUN => Body::Noop,
            message_type => Body::Data {
                message_type,
                payload,
            },
        };
        out.push(Reply {
            sequence: msg.sequence_number(),
            flags: msg.flags(),
            body,
        });
        pos += length.next_multiple_of(4);
    }
    Ok(out)
}

/// What a dump has said so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// More buffers follow.
    More,
    /// `NLMSG_DONE` (or an acknowledgement) arrived; `interrupted` when a reply carried
    /// `NLM_F_DUMP_INTR` (the caller starts again).
    Complete {
        /// The dump changed while it was read.
        interrupted: bool,
    },
    /// The kernel refused with this (positive) errno.
    Refused(i32),
}

/// The replies of one dump request, gathered buffer by buffer: the reader feeds it what
/// the socket receives, tests feed it fixture buffers.
#[derive(Debug)]
pub struct Dump<T> {
    sequence: u32,
    name: String,
    buffers: usize,
    interrupted: bool,
    found: Vec<T>,
}

impl<T> Dump<T> {
    /// A dump of request `name` sent with sequence number `sequence`.
    pub fn new(name: &str, sequence: u32) -> Dump<T> {
        Dump {
            sequence,
            name: name.to_string(),
            buffers: 0,
            interrupted: false,
            found: Vec::new(),
        }
    }

    /// Takes one receive buffer: parses each data reply of this request with `parse`
    /// (messages of other sequence numbers are ignored). Errors name the request, the
    /// buffer, the message and the attribute.
    pub fn absorb(
        &mut self,
        buffer: &[u8],
        parse: impl Fn(&[u8], &str) -> Result<Vec<T>, WireError>,
    ) -> Result<Step, WireError> {
        self.buffers += 1;
        let at = format!("{} reply buffer {}", self.name, self.buffers);
        for (i, reply) in replies(buffer, &at)?.into_iter().enumerate() {
            if reply.sequence != self.sequence {
                continue;
            }
            self.interrupted |= reply.flags & NLM_F_DUMP_INTR != 0;
            match reply.body {
                Body::Data { payload, .. } => {
                    self.found
                        .extend(parse(payload, &format!("{at}, message {}", i + 1))?);
                }
                Body::Done(0) | Body::Ack => {
                    return Ok(Step::Complete {
                        interrupted: self.interrupted,
                    })
                }
                Body::Done(code) | Body::Error(code) => return Ok(Step::Refused(-code)),
                Body::Noop => {}
            }
        }
        Ok(Step::More)
    }

    /// What was parsed.
    pub fn into_found(self) -> Vec<T> {
        self.found
    }
}

/// Emits one message (`nlmsghdr` and `payload`), for requests and fixtures.
pub fn emit(message_type: u16, flags: u16, sequence: u32, payload: &[u8]) -> Vec<u8> {
    let length = NLMSG_HDRLEN + payload.len();
    let mut bytes = vec![0u8; length.next_multiple_of(4)];
    let mut msg = NetlinkBuffer::new(&mut bytes[..]);
    msg.set_length(length as u32);
    msg.set_message_type(message_type);
    msg.set_flags(flags);
    msg.set_sequence_number(sequence);
    msg.set_port_number(0);
    msg.payload_mut().copy_from_slice(payload);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_split_with_their_bodies() {
        let mut buf = emit(5 * 1024 + 13, 2, 7, &[8, 0, 1, 0, 0, 0, 0, 0]);
        buf.extend(emit(NLMSG_DONE, 2, 7, &(-22i32).to_ne_bytes()));
        let mut err = (-1i32).to_ne_bytes().to_vec();
        err.extend(emit(5 * 1024 + 13, 0x301, 7, &[]));
        buf.extend(emit(NLMSG_ERROR, 0, 8, &err));
        buf.extend(emit(NLMSG_DONE, 2, 9, &[]));
        let list = replies(&buf, "buffer").unwrap();
        assert_eq!(list.len(), 4);
        assert_eq!(list[0].sequence, 7);
        assert_eq!(list[0].flags, 2);
        assert!(
            matches!(list[0].body, Body::Data { message_type: 5133, payload } if payload.len() == 8)
        );
        assert_eq!(list[1].body, Body::Done(-22));
        assert_eq!(list[2].body, Body::Error(-1));
        assert_eq!(list[2].sequence, 8);
        assert_eq!(list[3].body, Body::Done(0));
    }

    #[test]
    fn a_cut_message_names_its_position() {
        let buf = emit(NLMSG_DONE, 2, 1, &[0; 4]);
        let mut two = buf.clone();
        two.extend(&buf[..10]);
        let e = replies(&two, "recv 1").unwrap_err();
        assert!(e.at().starts_with("recv 1, message 2 at byte 20"), "{e}");
    }
}
