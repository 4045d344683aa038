/** The fork tab starts from the config the experiment was submitted with
 * (``original_config_yaml``), not the expanded one full of defaults the user never wrote;
 * the config tab still shows the expanded one. Forking posts the edited text. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fireEvent, screen, waitFor } from "@testing-library/react";
import { callsTo, installFakeMaster, liveChannel, open, removeFakeMaster, routes } from "./fake-master";

const SUBMITTED = "searcher:\n  name: single\n  metric: loss\ndescription: mine\n";
const EXPANDED = "name: null\ndata: {}\nrecords_per_epoch: 0\n" + SUBMITTED + "experiment_seed: 1234\n";

function experiment7() {
  routes["GET /api/v1/ui/experiments/7"] = () => [200, {
    id: 7, state: "COMPLETED", description: "mine", labels: [], archived: false, progress: 1, owner: "determined",
    parent_id: null, start_time: "2026-11-01T10:00:00+00:00", end_time: null, duration: 1, searcher: "single",
    metric: "loss", smaller_is_better: true, best_metric: null, num_trials: 0, config: {}, config_yaml: EXPANDED,
    original_config_yaml: SUBMITTED, trials: [], metric_names: { training: [], validation: [] },
    last_metric_id: 0, last_log_id: 0, step_unit: "batch",
  }];
}

async function openTab(tab: string) {
  experiment7();
  const live = liveChannel();
  open(`/experiments/7?tab=${tab}`);
  await waitFor(() => expect(live.queries).toHaveLength(1));
  live.connect();
}

describe("the fork tab", () => {
  beforeEach(installFakeMaster);
  afterEach(removeFakeMaster);

  it("starts from the config as submitted and posts the edited text with its parent", async () => {
    routes["GET /api/v1/experiments/7/model_def"] = () => [200, { b64_tgz: "dGd6" }];
    routes["POST /api/v1/experiments"] = () => [201, { id: 8, warnings: [] }];
    await openTab("fork");
    const area = (await screen.findByLabelText("fork config")) as HTMLTextAreaElement;
    expect(area.value).toBe(SUBMITTED);
    expect(area.value).not.toContain("records_per_epoch");
    fireEvent.change(area, { target: { value: SUBMITTED.replace("mine", "forked") } });
    fireEvent.click(screen.getByRole("button", { name: "create experiment" }));
    await waitFor(() => expect(callsTo("/api/v1/experiments")).toHaveLength(1));
    expect(callsTo("/api/v1/experiments")[0].body).toEqual(
      { config: SUBMITTED.replace("mine", "forked"), model_def: "dGd6", activate: true, parent_id: 7 });
  });

  it("leaves the config tab showing the expanded config", async () => {
    await openTab("config");
    expect((await screen.findByTestId("config-yaml")).textContent).toBe(EXPANDED);
  });
});
