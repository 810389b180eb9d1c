#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: basil_plan
short_description: Create, approve, apply or cancel a plan of Storage vMotions and wait for it
version_added: "0.1.0"
description:
  - A plan is made from a recommendation (the pod's latest unless O(recommendation_id) is given) and goes
    proposed, approved, running, then succeeded, failed or cancelled.
  - The module brings the plan of that recommendation to O(state). A recommendation already made into a
    plan is not planned twice, so O(state=applied) on a finished plan changes nothing.
  - With O(wait=true) it follows a running plan until it ends and returns each move's outcome.
author:
  - Basil contributors (@basil-project)
options:
  pod:
    description:
      - The pod whose latest recommendation to plan. Needed unless O(recommendation_id) or O(plan_id) is given.
    type: str
  recommendation_id:
    description:
      - The recommendation to plan (from M(basil.vsphere.basil_recommendation)).
    type: str
  plan_id:
    description:
      - An existing plan to act on instead of a recommendation's.
    type: int
  state:
    description:
      - V(present) makes the plan (proposed); V(approved) also approves it, so the next rebalance window
        applies it; V(applied) applies it now; V(cancelled) cancels it (a running move finishes, no new
        move starts).
    type: str
    choices: [present, approved, applied, cancelled]
    default: applied
  wait:
    description:
      - Wait until an applied or cancelled plan has ended.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait before failing.
    type: int
    default: 3600
  poll_interval:
    description:
      - Seconds between two reads of the plan while waiting.
    type: float
    default: 5
extends_documentation_fragment:
  - basil.vsphere.connection
attributes:
  check_mode:
    description: Reports what it would do (create, approve, apply, cancel) and does nothing.
    support: full
  diff_mode:
    description: Shows the plan's state before and after.
    support: full
notes:
  - A plan whose moves failed makes the module fail, with each move's outcome in RV(moves).
  - Basil answers 409 when a recommendation can no longer be planned (for example it is stale because the
    pod changed since); compute a new one with M(basil.vsphere.basil_recommendation).
"""

EXAMPLES = r"""
- name: Apply the gold pod's latest recommendation and wait for it
  basil.vsphere.basil_plan:
    basil_url: https://basil.example.com:8443
    basil_token: "{{ basil_operator_token }}"
    pod: gold
    state: applied
    wait_timeout: 7200
  register: plan

- name: Approve a given recommendation for the next rebalance window
  basil.vsphere.basil_plan:
    basil_url: https://basil.example.com:8443
    recommendation_id: "{{ rec.recommendation.id }}"
    state: approved

- name: Cancel a plan
  basil.vsphere.basil_plan:
    basil_url: https://basil.example.com:8443
    plan_id: 42
    state: cancelled
"""

RETURN = r"""
plan:
  description: The plan as Basil returns it; null when there was nothing to plan.
  returned: always
  type: dict
plan_id:
  description: The plan's id.
  returned: when there is a plan
  type: int
  sample: 7
plan_state:
  description: proposed, approved, running, succeeded, failed or cancelled (what it would be in check mode).
  returned: always
  type: str
  sample: succeeded
actions:
  description: What the module did (or would do in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: [create, apply, wait]
moves:
  description: Each move's id, disk, vm, from, to, size_gb, state, progress and message.
  returned: always
  type: list
  elements: dict
moves_succeeded:
  description: How many moves succeeded.
  returned: always
  type: int
moves_failed:
  description: How many moves failed.
  returned: always
  type: int
recommendation_id:
  description: The recommendation the plan was made from.
  returned: when known
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.basil.vsphere.plugins.module_utils.basil_api import (
    FINISHED_PLAN_STATES,
    BasilClient,
    BasilError,
    module_kwargs,
    path_segment,
    summarize_moves,
)

# How far each wanted state takes a plan along proposed -> approved -> running -> succeeded.
RANK = dict(proposed=0, approved=1, running=2, succeeded=3)
WANTED = dict(present=0, approved=1, applied=3)


def actions_for(state, current):
    """The actions that take a plan in *current* state (None: no plan yet) to the wanted *state*."""
    if state == "cancelled":
        if current is None or current in FINISHED_PLAN_STATES:
            return []
        return ["cancel"]
    if current in ("failed", "cancelled"):
        return []
    steps = []
    rank = -1 if current is None else RANK[current]
    if rank < 0:
        steps.append("create")
        rank = 0
    wanted = WANTED[state]
    if wanted == 1 and rank < 1:
        steps.append("approve")
    if wanted == 3 and rank < 2:
        steps.append("apply")  # Basil approves a proposed plan it is asked to apply
    return steps


class PlanModule:
    def __init__(self, module):
        self.module = module
        self.client = BasilClient(module)
        self.params = module.params

    def recommendation(self):
        """The recommendation to plan: the given one's id, or the pod's latest (None when there is none)."""
        if self.params["recommendation_id"]:
            return dict(id=self.params["recommendation_id"], moves=None)
        path = "/pods/%s/recommendations" % path_segment(self.params["pod"])
        found = self.client.get_or_none(path)
        if found is None:
            self.client.get("/pods/%s" % path_segment(self.params["pod"]))  # an unknown pod fails here
        return found

    def existing_plan(self, recommendation_id):
        """The newest plan made from *recommendation_id*, if any."""
        query = dict(pod=self.params["pod"]) if self.params["pod"] else None
        for plan in self.client.get("/plans", query=query) or []:
            if str(plan.get("recommendation_id")) == str(recommendation_id):
                return plan
        return None

    def create(self, recommendation_id):
        try:
            return self.client.post("/plans", dict(recommendation_id=as_id(recommendation_id)), expect=(201,))
        except BasilError as err:
            if err.status == 409:
                self.module.fail_json(
                    msg="recommendation %s can no longer be planned: Basil says: %s. Compute a new "
                    "recommendation (basil.vsphere.basil_recommendation compute=true) and plan that."
                    % (recommendation_id, err.message),
                    **err.result()
                )
            raise

    def wait(self, plan_id):
        def ended():
            plan = self.client.get("/plans/%d" % plan_id)
            return plan if plan.get("state") in FINISHED_PLAN_STATES else None

        return self.client.wait_for(
            "plan %d to end" % plan_id, ended, self.params["wait_timeout"], self.params["poll_interval"]
        )

    def run(self):
        state = self.params["state"]
        recommendation_id = self.params["recommendation_id"]
        plan = None
        if self.params["plan_id"]:
            plan = self.client.get("/plans/%d" % self.params["plan_id"])
            recommendation_id = plan.get("recommendation_id")
        else:
            recommendation = self.recommendation()
            if recommendation is not None:
                recommendation_id = recommendation["id"]
                plan = self.existing_plan(recommendation_id)
                if plan is None and state != "cancelled" and recommendation.get("moves") == []:
                    return self.finish(None, [], recommendation_id, "the recommendation moves nothing")
        current = plan.get("state") if plan else None
        if plan is None and recommendation_id is None:
            return self.finish(None, [], None, "the pod has no recommendation to plan")
        steps = actions_for(state, current)
        if current in ("failed", "cancelled") and state != "cancelled":
            self.module.fail_json(
                msg="plan %s is %s; state=%s cannot bring it back (plan a new recommendation)"
                % (plan["id"], current, state),
                plan=plan, plan_id=plan["id"], plan_state=current, moves=summarize_moves(plan.get("moves")),
            )
        wait = self.params["wait"] and (state in ("applied", "cancelled")) and current not in FINISHED_PLAN_STATES
        if self.module.check_mode:
            planned = list(steps) + (["wait"] if wait else [])
            return self.finish(
                plan, planned, recommendation_id, None, changed=bool(steps), predicted=state, before=current
            )
        for step in steps:
            if step == "create":
                plan = self.create(recommendation_id)
            else:
                plan = self.client.post("/plans/%d/%s" % (int(plan["id"]), step))
        done = list(steps)
        if wait and plan.get("state") not in FINISHED_PLAN_STATES:
            plan = self.wait(int(plan["id"]))
            done.append("wait")
        return self.finish(plan, done, recommendation_id, None, changed=bool(steps), before=current)

    def finish(self, plan, actions, recommendation_id, message, changed=False, predicted=None, before=None):
        moves = summarize_moves(plan.get("moves")) if plan else []
        plan_state = plan.get("state") if plan else None
        if self.module.check_mode and predicted is not None and actions:
            plan_state = dict(present="proposed", approved="approved", applied="succeeded").get(
                predicted, predicted
            )
        result = dict(
            changed=changed,
            plan=plan,
            plan_state=plan_state,
            actions=actions,
            moves=moves,
            moves_succeeded=sum(1 for m in moves if m.get("state") == "succeeded"),
            moves_failed=sum(1 for m in moves if m.get("state") == "failed"),
        )
        if plan:
            result["plan_id"] = plan.get("id")
        if recommendation_id is not None:
            result["recommendation_id"] = str(recommendation_id)
        if message:
            result["msg"] = message
        if self.module._diff:
            result["diff"] = dict(
                before=dict(plan=result.get("plan_id"), state=before),
                after=dict(plan=result.get("plan_id"), state=plan_state),
            )
        if plan_state == "failed" and not self.module.check_mode:
            self.module.fail_json(
                msg="plan %s failed: %d of %d moves failed (see moves)"
                % (plan["id"], result["moves_failed"], len(moves)),
                **result
            )
        if plan_state == "cancelled" and self.params["state"] != "cancelled":
            self.module.fail_json(msg="plan %s was cancelled" % plan["id"], **result)
        self.module.exit_json(**result)


def as_id(value):
    """Basil's ids are integers; keep any other text as it is (Basil says what is wrong with it)."""
    text = str(value)
    return int(text) if text.isdigit() else text


def main():
    spec = dict(
        pod=dict(type="str"),
        recommendation_id=dict(type="str"),
        plan_id=dict(type="int"),
        state=dict(type="str", default="applied", choices=["present", "approved", "applied", "cancelled"]),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=3600),
        poll_interval=dict(type="float", default=5),
    )
    module = AnsibleModule(
        **module_kwargs(
            spec,
            supports_check_mode=True,
            required_one_of=[("pod", "recommendation_id", "plan_id")],
            mutually_exclusive=[("recommendation_id", "plan_id")],
        )
    )
    runner = PlanModule(module)
    try:
        runner.run()
    except BasilError as err:
        runner.client.fail(err)


if __name__ == "__main__":
    main()
