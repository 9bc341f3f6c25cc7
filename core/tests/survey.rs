//! SURVEY (PATTERNS §6): one question to every connected respondent, answers until a deadline,
//! over every transport. The names are seed 001 §6.2's.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::pair;
use tokio::sync::oneshot;
use weida::{ErrorCode, Listener, Metadata, Respondent, Runtime, SurveyRun};

/// Binds respondents at `/r0`.. on `listener`, each answering its own name once asked.
fn answering(listener: &Listener, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let path = format!("/r{i}");
            let r = listener.respondent(&path).unwrap();
            let address = r.address().to_string();
            tokio::spawn(async move {
                while let Ok(mut ex) = r.accept().await {
                    let q = ex.take_body().await.unwrap();
                    let answer = format!("{}:{}", path, String::from_utf8_lossy(&q));
                    ex.reply(answer).await.unwrap();
                }
            });
            address
        })
        .collect()
}

/// Every answer of `run` until it ends.
async fn all(run: &SurveyRun) -> Vec<weida::Result<weida::Message>> {
    let mut out = Vec::new();
    while let Some(a) = run.next().await {
        out.push(a);
    }
    out
}

on_every_transport!(
    every_respondent_answers_within_the_deadline,
    |t| async move {
        let (_s, listener, client) = pair(t).await;
        let surveyor = client.surveyor();
        for a in answering(&listener, 3) {
            surveyor.connect(&a).await.unwrap();
        }
        let run = surveyor
            .survey("who?", Duration::from_secs(20))
            .await
            .unwrap();
        assert_eq!(run.respondents(), 3);
        let mut got: Vec<_> = all(&run)
            .await
            .into_iter()
            .map(|a| String::from_utf8(a.unwrap().body.to_vec()).unwrap())
            .collect();
        got.sort();
        assert_eq!(got, vec!["/r0:who?", "/r1:who?", "/r2:who?"]);
        assert_eq!(run.late(), 0);
        // Answered whole before the deadline: the run ends with the last answer, not the deadline.
        assert!(!run.expired());
    }
);

on_every_transport!(a_late_reply_is_counted_and_not_delivered, |t| async move {
    let (_s, listener, client) = pair(t).await;
    let slow = listener.respondent("/slow").unwrap();
    let (go_tx, go) = oneshot::channel::<()>();
    let slow_address = slow.address().to_string();
    tokio::spawn(async move {
        let mut ex = slow.accept().await.unwrap();
        ex.take_body().await.unwrap();
        let _ = go.await;
        let _ = ex.reply("too late").await;
    });
    let surveyor = client.surveyor();
    surveyor.connect(&slow_address).await.unwrap();
    let run = surveyor
        .survey("q", Duration::from_millis(300))
        .await
        .unwrap();
    assert_eq!(run.respondents(), 1);
    // Nothing before the deadline: the run ends there.
    assert!(run.next().await.is_none());
    assert!(run.expired());
    go_tx.send(()).unwrap();
    run.settled().await;
    assert_eq!(run.late(), 1);
    assert!(
        run.next().await.is_none(),
        "a late answer is never delivered"
    );
});

on_every_transport!(
    an_answer_that_arrived_in_time_survives_a_caller_that_reads_late,
    |t| async move {
        let (_s, listener, client) = pair(t).await;
        let surveyor = client.surveyor();
        for a in answering(&listener, 1) {
            surveyor.connect(&a).await.unwrap();
        }
        let run = surveyor
            .survey("q", Duration::from_millis(1500))
            .await
            .unwrap();
        // The caller reads only once the deadline has passed: what is tested is time passing.
        tokio::time::sleep(Duration::from_millis(1600)).await;
        assert!(run.expired());
        let a = run.next().await.expect("arrived in time").unwrap();
        assert_eq!(a.body, Bytes::from("/r0:q"));
        assert_eq!(run.late(), 0);
    }
);

on_every_transport!(
    a_respondent_that_never_reads_cannot_hold_the_survey_open,
    |t| async move {
        let (_s, listener, client) = pair(t).await;
        let mute = listener.respondent("/mute").unwrap();
        let mute_address = mute.address().to_string();
        // Accepts and holds every question, reading and answering nothing.
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok(ex) = mute.accept().await {
                held.push(ex);
            }
        });
        let surveyor = client.surveyor();
        surveyor.connect(&mute_address).await.unwrap();
        for a in answering(&listener, 1) {
            surveyor.connect(&a).await.unwrap();
        }
        let run = surveyor
            .survey("q", Duration::from_millis(500))
            .await
            .unwrap();
        // Both were asked (the question fits any window); the mute one's answer never comes,
        // and the run ends at the deadline with the other's.
        assert_eq!(run.respondents(), 2);
        let got = all(&run).await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_ref().unwrap().body, Bytes::from("/r0:q"));
        assert!(run.expired());
        // A question larger than the mute respondent's window cannot be asked of it within the
        // deadline: it is not counted, and asking returns at the deadline. (In process a write
        // is handed over whole, so there it is asked.)
        if t == common::Transport::Inproc {
            return;
        }
        let only_mute = client.surveyor();
        only_mute.connect(&mute_address).await.unwrap();
        let run = only_mute
            .survey(vec![7u8; 4 << 20], Duration::from_millis(300))
            .await
            .unwrap();
        assert_eq!(run.respondents(), 0);
        assert!(run.next().await.is_none());
    }
);

on_every_transport!(
    dropping_a_run_ends_the_exchanges_it_was_collecting,
    |t| async move {
        let (_s, listener, client) = pair(t).await;
        let r = listener.respondent("/r").unwrap();
        let address = r.address().to_string();
        let (asked_tx, asked) = oneshot::channel::<()>();
        let told = tokio::spawn(async move {
            let mut ex = r.accept().await.unwrap();
            ex.take_body().await.unwrap();
            let mut reply = ex.open_reply(Metadata::new()).await.unwrap();
            asked_tx.send(()).unwrap();
            reply.stopped().await
        });
        let surveyor = client.surveyor();
        surveyor.connect(&address).await.unwrap();
        let run = surveyor.survey("q", Duration::from_secs(20)).await.unwrap();
        asked.await.unwrap();
        drop(run);
        assert_eq!(told.await.unwrap().code(), ErrorCode::Canceled);
    }
);

/// A survey of `question` to one respondent that refuses each question as it arrives, reading
/// none of it, and `answering` that answer: every respondent is asked, and the refusal is one
/// error among the answers, with its reason.
async fn one_refusal_among(t: common::Transport, answering_too: usize, question: Bytes) {
    let (_s, listener, client) = pair(t).await;
    let no: Respondent = listener.respondent("/no").unwrap();
    let no_address = no.address().to_string();
    tokio::spawn(async move {
        while let Ok(ex) = no.accept().await {
            ex.reject("not me").await.unwrap();
        }
    });
    let surveyor = client.surveyor();
    surveyor.connect(&no_address).await.unwrap();
    for a in answering(&listener, answering_too) {
        surveyor.connect(&a).await.unwrap();
    }
    let run = surveyor
        .survey(question, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(run.respondents(), answering_too + 1);
    let got = all(&run).await;
    assert_eq!(got.len(), answering_too + 1, "{got:?}");
    let errors: Vec<_> = got.iter().filter_map(|a| a.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{got:?}");
    assert_eq!(errors[0].code(), ErrorCode::Rejected, "{}", errors[0]);
    assert!(errors[0].to_string().contains("not me"), "{}", errors[0]);
}

on_every_transport!(a_respondent_that_refuses_is_one_error_among_replies, |t| {
    one_refusal_among(t, 2, Bytes::from("q"))
});

// A question larger than any stream window, refused unread, is stopped while it is being
// written (the refusal race): the respondent is still asked, and its refusal is its answer.
on_every_transport!(
    a_respondent_that_refuses_before_reading_the_question_is_one_error_among_replies,
    |t| one_refusal_among(t, 1, Bytes::from(vec![7u8; 4 << 20]))
);

on_every_transport!(
    a_respondent_that_dies_mid_reply_does_not_end_the_survey,
    |t| async move {
        let (_s, listener, client) = pair(t).await;
        // The dying respondent lives in a runtime of its own, shut down mid-reply.
        let dying_rt = Runtime::new(common::config(Default::default())).unwrap();
        let dying_listener = dying_rt.bind(&common::bind_address(t)).await.unwrap();
        let dying = dying_listener.respondent("/dying").unwrap();
        let dying_address = dying.address().to_string();
        let (writing_tx, writing) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let mut ex = dying.accept().await.unwrap();
            ex.take_body().await.unwrap();
            let mut reply = ex.open_reply(Metadata::new()).await.unwrap();
            reply.write(Bytes::from("half")).await.unwrap();
            writing_tx.send(()).unwrap();
            std::future::pending::<()>().await;
        });
        let surveyor = client.surveyor();
        surveyor.connect(&dying_address).await.unwrap();
        for a in answering(&listener, 1) {
            surveyor.connect(&a).await.unwrap();
        }
        let run = surveyor.survey("q", Duration::from_secs(20)).await.unwrap();
        writing.await.unwrap();
        dying_rt.shutdown();
        let got = all(&run).await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got.iter().filter(|a| a.is_ok()).count(), 1, "{got:?}");
        drop(dying_listener);
    }
);

on_every_transport!(
    a_survey_with_no_respondents_is_empty_not_an_error,
    |t| async move {
        let (_s, _listener, client) = pair(t).await;
        let surveyor = client.surveyor();
        let run = surveyor
            .survey("anyone?", Duration::from_secs(20))
            .await
            .unwrap();
        assert_eq!(run.respondents(), 0);
        assert!(run.next().await.is_none());
    }
);
