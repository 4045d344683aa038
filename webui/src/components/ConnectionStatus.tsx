/** "reconnecting…" in the top bar while a live channel is down (the master restarts, the
 * network fails); the open page catches up by itself once the channel is back. */
import { useSyncExternalStore } from "react";
import { channelsDown } from "../events";

export default function ConnectionStatus() {
  const isDown = useSyncExternalStore(channelsDown.listen, channelsDown.get);
  if (!isDown) return null;
  return (
    <span className="connection-lost" data-testid="connection-lost" role="status"
      title="The connection to the master was lost. This page catches up once it is back; nothing needs reloading.">
      reconnecting…
    </span>
  );
}
