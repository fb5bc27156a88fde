// The port follows its interface, as a Thunderbolt port follows its cable:
// set down (`ip link set down`) or stripped of its IPv4 address, the port goes
// DOWN with IBV_EVENT_PORT_ERR on the context's async fd and the context
// delivers nothing; up again, IBV_EVENT_PORT_ACTIVE. The receiver thread
// looks at the interface at most every 100 ms.
#include <unistd.h>

#include <chrono>

#include "hw/softrdma/interfaces.hpp"
#include "hw/softrdma/internal.hpp"

namespace softrdma {

namespace {
constexpr auto kCheckEvery = std::chrono::milliseconds(100);
}  // namespace

void post_async_event(Context& ctx, const ibv_async_event& event) {
  (void)!write(ctx.async_write, &event, sizeof event);
}

void watch_port(Context& ctx) {
  const auto now = std::chrono::steady_clock::now();
  if (now < ctx.port_checked + kCheckEvery) return;
  ctx.port_checked = now;
  const std::optional<Interface> i = find_interface(ctx.device->ifname);
  const bool down = !i || !i->running;
  std::lock_guard lock(ctx.mu);
  if (down == ctx.port_down) return;
  ctx.port_down = down;
  for (Qp* qp : ctx.qps)
    if (qp) qp->in_message = false;  // a message under way when the link went is lost
  ibv_async_event event{};
  event.event_type = down ? IBV_EVENT_PORT_ERR : IBV_EVENT_PORT_ACTIVE;
  event.element.port_num = 1;
  post_async_event(ctx, event);
}

}  // namespace softrdma
