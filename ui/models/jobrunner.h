#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <utility>

namespace waferscope::ui {

// What a background job sees of its runner: whether it should stop, and a way to say how far
// it has come. Copies share one state; safe to use from the worker thread.
class JobContext {
public:
    bool cancelled() const { return m_cancelled->load(); }
    // For core functions that poll a flag (core::report::writeRunDirectory).
    const std::atomic<bool>* cancelFlag() const { return m_cancelled.get(); }
    // A fraction in [0, 1]; arrives on the GUI thread as JobRunner::progress while the job is
    // still the newest.
    void progress(double fraction) const
    {
        if (m_progress)
            m_progress(fraction);
    }

private:
    friend class JobRunner;
    std::shared_ptr<std::atomic<bool>> m_cancelled = std::make_shared<std::atomic<bool>>(false);
    std::function<void(double)> m_progress;
};

// One lane of one-shot background work (a model load, a compile, a run, a kernel run, a report
// export): start() runs `work` on the global thread pool and hands its result to `deliver` on
// the GUI thread, but only when the job is still the lane's newest and was not cancelled. A
// newer start() or cancel() sets the running job's cancel flag and drops its result; every job
// gets an id. Tests that must see every job finish drain the global pool
// (QThreadPool::waitForDone) and then the event queue. This is the only place in the GUI that starts one-shot
// background jobs (the playback's frame worker, a continuous producer, is its own class).
//
// Lives on the GUI thread; `work` runs on a pool thread and must not touch QObjects.
class JobRunner : public QObject {
    Q_OBJECT
public:
    explicit JobRunner(QObject* parent = nullptr);
    ~JobRunner() override; // cancels: a job still running has nowhere to deliver

    // Starts a job and returns its id. `work(context)` computes a Result off the GUI thread;
    // `deliver(jobId, result)` runs on the GUI thread if the job is still wanted.
    template <typename Result>
    int start(std::function<Result(const JobContext&)> work, std::function<void(int, Result)> deliver)
    {
        return launch([work = std::move(work), deliver = std::move(deliver)](
                          int jobId, const JobContext& context) -> std::function<void()> {
            auto result = std::make_shared<Result>(work(context));
            return [deliver, jobId, result] { deliver(jobId, std::move(*result)); };
        });
    }
    // Drops the running job's result and asks it to stop.
    void cancel();
    // Asks the running job to stop but still delivers what it returns (a job that must report
    // how it ended, such as an export that removes its temporaries first). From then on the lane
    // no longer counts as busy: nothing more is asked of it.
    void requestStop();
    // A job was started and has neither delivered nor been cancelled or asked to stop.
    bool isBusy() const { return m_busy && !m_stopping; }
    int latestJob() const { return m_latestJob; }

Q_SIGNALS:
    void busyChanged(bool busy);
    void progress(int jobId, double fraction);

private:
    using Task = std::function<std::function<void()>(int jobId, const JobContext& context)>;
    int launch(Task task);
    void setBusy(bool busy);

    int m_latestJob = 0; // id of the newest job; results of older ones are dropped
    bool m_busy = false;
    bool m_stopping = false; // the newest job was asked to stop and will still deliver
    JobContext m_context; // of the newest job
};

} // namespace waferscope::ui
