/** The sign-in page says who is signed in; hyperparameter importance says when a search has
 * too few trials for an estimate rather than reading 0%. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { ImportanceBars, estimable } from "../components/HparamViews";
import { setToken } from "../api";
import { callsTo, installFakeMaster, open, removeFakeMaster, routes } from "./fake-master";

beforeEach(installFakeMaster);
afterEach(removeFakeMaster);

describe("/login while signed in", () => {
  it("says who is signed in, with a way back and a sign-out button, above the form", async () => {
    routes["POST /api/v1/auth/logout"] = () => [200, {}];
    open("/login?next=/experiments/3");
    const line = await screen.findByTestId("signed-in-as");
    expect(line.textContent).toContain("Signed in as determined.");
    expect(within(line).getByRole("link", { name: "Go back" }).getAttribute("href")).toBe("/experiments/3");
    expect(screen.getByRole("button", { name: "Sign in" })).toBeTruthy();  // another user may sign in
    fireEvent.click(within(line).getByRole("button", { name: "sign out" }));
    await waitFor(() => expect(callsTo("/api/v1/auth/logout")).toHaveLength(1));
    await waitFor(() => expect(screen.queryByTestId("signed-in-as")).toBeNull());
  });

  it("says nothing of the kind to a visitor with no token", async () => {
    setToken(null);
    routes["GET /api/v1/me"] = () => [401, { error: "no token" }];
    open("/login");
    await screen.findByRole("button", { name: "Sign in" });
    expect(screen.queryByTestId("signed-in-as")).toBeNull();
  });
});

describe("importance of a small search", () => {
  it("needs more trials than groups of values", () => {
    expect(estimable({ name: "lr", importance: 0, share: 0, needs: 5 }, 4)).toBe(false);
    expect(estimable({ name: "lr", importance: 0, share: 0, needs: 5 }, 5)).toBe(true);
    expect(estimable({ name: "lr", importance: 0.3, share: 1 }, 4)).toBe(true);  // an older master
  });

  it("says what an estimate needs instead of 0%", () => {
    render(<ImportanceBars trials={4} metricName="validation_loss" rows={[
      { name: "opt", importance: 0.8, share: 1, needs: 3 }, { name: "lr", importance: 0, share: 0, needs: 5 }]} />);
    const rows = within(screen.getByTestId("hparam-importance")).getAllByRole("row").slice(1);
    expect(rows[0].textContent).toBe("opt 100%0.8");
    expect(rows[1].textContent).toBe("lrno estimate yet: needs 5 trials that reported validation_loss, 4 have–");
    expect(rows[1].textContent).not.toContain("0%");
  });
});
