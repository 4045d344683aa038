from determined.harness import Kind, Sequencer


def drive(seq, target, policy_ckpt=True):
    """Run a Train op to ``target`` batches; return the workloads."""
    log = []
    while True:
        nxt = seq.next_for_train(target)
        if nxt is None:
            return log
        log.append((nxt.kind.value, nxt.num_batches))
        if nxt.kind is Kind.RUN_STEP:
            seq.trained(nxt.num_batches)
        elif nxt.kind is Kind.COMPUTE_VALIDATION_METRICS:
            seq.validated(post_checkpoint=policy_ckpt)
        else:
            seq.checkpointed()


def test_scheduling_unit_caps_steps():
    assert drive(Sequencer(scheduling_unit=30), 70) == [
        ("RUN_STEP", 30), ("RUN_STEP", 30), ("RUN_STEP", 10)]


def test_periods_interleave_validation_and_checkpoints():
    log = drive(Sequencer(scheduling_unit=100, min_validation_period=25, min_checkpoint_period=40), 60)
    assert log == [
        ("RUN_STEP", 25), ("COMPUTE_VALIDATION_METRICS", 0), ("CHECKPOINT_MODEL", 0),
        ("RUN_STEP", 25), ("COMPUTE_VALIDATION_METRICS", 0), ("CHECKPOINT_MODEL", 0),
        ("RUN_STEP", 10),
    ]


def test_no_post_validation_checkpoint_when_policy_declines():
    log = drive(Sequencer(scheduling_unit=100, min_validation_period=10), 20, policy_ckpt=False)
    assert ("CHECKPOINT_MODEL", 0) not in log


def test_initial_validation_first():
    seq = Sequencer(scheduling_unit=10, need_initial_validation=True)
    assert seq.next_for_train(5).kind is Kind.COMPUTE_VALIDATION_METRICS


def test_validate_op_checkpoints_first():
    seq = Sequencer(scheduling_unit=10)
    seq.trained(5)
    assert seq.next_for_validate().kind is Kind.CHECKPOINT_MODEL
    seq.checkpointed()
    assert seq.next_for_validate().kind is Kind.COMPUTE_VALIDATION_METRICS


def test_stop_request_forces_checkpoint():
    seq = Sequencer(scheduling_unit=10)
    seq.trained(3)
    seq.stop_requested = True
    assert seq.next_for_train(100).kind is Kind.CHECKPOINT_MODEL
