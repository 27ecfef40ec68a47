/*
 * Completion events between processes. A completion channel is a UNIX
 * datagram socket bound to an abstract address; whoever clears a CQ's
 * armed bit in the fabric (see fabric_cq_notify_word) sends it one small
 * datagram, which makes the channel's fd readable.
 */
#ifndef VERBS_EMU_NOTIFY_H
#define VERBS_EMU_NOTIFY_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace verbs_emu {

/* Room for an abstract socket name, NUL included (sun_path less the
 * leading NUL). */
constexpr size_t kNotifyAddressBytes = 107;

/* A fresh address for a new channel of this process. */
std::string make_channel_address();

/* Fires the current arming of `slot`, if it is armed and nobody else fired
 * it: sends one datagram to `address` (at most kNotifyAddressBytes, need
 * not be NUL terminated when it fills them). */
void notify_fire(uint32_t slot, const char *address);

/* Sends a datagram to `address` regardless of arming (keeps a channel's
 * fd readable while it still has events to hand out). */
void notify_send(const char *address);

} // namespace verbs_emu

#endif
