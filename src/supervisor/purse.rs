//! What runs going on at once (an epic's stories) may spend together: dollars, tokens, agent
//! invocations, time in steps. Each round of steps draws its allowance before it starts and
//! settles what it spent when it ends, so the steps in flight are never promised more than is
//! left: a CLI given its dollar share stops itself there, a step's timeout is its share of the
//! time, and no step starts once a limit is spent.

use std::sync::Mutex;

/// Amounts: spent, promised or allowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Amounts {
    /// Millionths of a US dollar.
    pub micro_usd: u64,
    /// Agent invocations.
    pub invocations: u32,
    /// Milliseconds in steps.
    pub ms: u64,
    /// Tokens, in and out, as the CLIs report them.
    pub tokens: u64,
    /// GitHub's premium requests, in thousandths, as Copilot CLI counts them.
    pub premium_milli: u64,
}

impl Amounts {
    /// What was added since `before`.
    pub fn since(self, before: Amounts) -> Amounts {
        Amounts {
            micro_usd: self.micro_usd.saturating_sub(before.micro_usd),
            invocations: self.invocations.saturating_sub(before.invocations),
            ms: self.ms.saturating_sub(before.ms),
            tokens: self.tokens.saturating_sub(before.tokens),
            premium_milli: self.premium_milli.saturating_sub(before.premium_milli),
        }
    }
}

/// The limits, each optional.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Millionths of a US dollar.
    pub micro_usd: Option<u64>,
    /// Agent invocations.
    pub invocations: Option<u32>,
    /// Milliseconds in steps.
    pub ms: Option<u64>,
    /// Tokens.
    pub tokens: Option<u64>,
    /// GitHub's premium requests, in thousandths: reported only when a CLI ends, so
    /// checked before a round, never shared out.
    pub premium_milli: Option<u64>,
}

/// Which limit stops a round from starting, with the numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exhausted {
    /// Dollars.
    Usd {
        /// The limit, in millionths of a dollar.
        limit: u64,
        /// Spent.
        spent: u64,
    },
    /// Invocations.
    Invocations {
        /// The limit.
        limit: u32,
        /// Spent or in flight.
        used: u32,
        /// What the round wants.
        wanted: usize,
    },
    /// Time in steps.
    Time {
        /// The limit, in milliseconds.
        limit: u64,
        /// Spent.
        spent: u64,
    },
    /// Tokens.
    Tokens {
        /// The limit.
        limit: u64,
        /// Spent.
        spent: u64,
    },
    /// GitHub's premium requests, in thousandths.
    PremiumRequests {
        /// The limit.
        limit: u64,
        /// Spent.
        spent: u64,
    },
}

impl Exhausted {
    /// How much of the limit is spent, as a fraction of it.
    pub fn spent_part(self) -> f64 {
        match self {
            Exhausted::Usd { limit, spent }
            | Exhausted::Tokens { limit, spent }
            | Exhausted::PremiumRequests { limit, spent }
            | Exhausted::Time { limit, spent } => spent as f64 / limit.max(1) as f64,
            Exhausted::Invocations { limit, used, .. } => used as f64 / f64::from(limit.max(1)),
        }
    }
}

/// One round's allowance, per step.
#[derive(Debug)]
#[must_use = "a draw is settled when its round ends"]
pub struct Draw {
    /// Dollars each step may spend (millionths), when dollars are limited.
    pub micro_usd: Option<u64>,
    /// Time each step may take (milliseconds), when time is limited.
    pub ms: Option<u64>,
    /// Tokens each step may spend, when tokens are limited.
    pub tokens: Option<u64>,
    steps: usize,
    promised: Amounts,
}

/// The shared purse.
#[derive(Debug)]
pub struct Purse {
    limits: Limits,
    /// Rounds that run at once at most (the epic's `--parallel`): what is left is shared
    /// among them.
    slots: usize,
    book: Mutex<Book>,
}

#[derive(Debug, Default)]
struct Book {
    spent: Amounts,
    promised: Amounts,
    /// Steps in flight.
    holders: usize,
}

impl Purse {
    /// A purse with `limits`, of which `spent` is spent already, shared by up to `slots`
    /// runs at once.
    pub fn new(limits: Limits, spent: Amounts, slots: usize) -> Purse {
        Purse {
            limits,
            slots: slots.max(1),
            book: Mutex::new(Book {
                spent,
                ..Book::default()
            }),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        // A thread that panicked while holding it left numbers that are still numbers.
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Draw the allowance of a round of `steps` steps: each an equal share of what is neither
    /// spent nor promised, among the slots not in use; or the limit that is spent.
    pub fn draw(&self, steps: usize) -> Result<Draw, Exhausted> {
        let steps = steps.max(1);
        let mut book = self.book();
        let (spent, promised) = (book.spent, book.promised);
        if let Some(limit) = self.limits.micro_usd.filter(|l| spent.micro_usd >= *l) {
            return Err(Exhausted::Usd {
                limit,
                spent: spent.micro_usd,
            });
        }
        if let Some(limit) = self.limits.tokens.filter(|l| spent.tokens >= *l) {
            return Err(Exhausted::Tokens {
                limit,
                spent: spent.tokens,
            });
        }
        let premium = self.limits.premium_milli;
        if let Some(limit) = premium.filter(|l| spent.premium_milli >= *l) {
            return Err(Exhausted::PremiumRequests {
                limit,
                spent: spent.premium_milli,
            });
        }
        if let Some(limit) = self.limits.ms.filter(|l| spent.ms >= *l) {
            return Err(Exhausted::Time {
                limit,
                spent: spent.ms,
            });
        }
        let used = spent.invocations + promised.invocations;
        if let Some(limit) = self
            .limits
            .invocations
            .filter(|l| used as usize + steps > *l as usize)
        {
            return Err(Exhausted::Invocations {
                limit,
                used,
                wanted: steps,
            });
        }
        let sharers = self.slots.saturating_sub(book.holders).max(steps) as u64;
        let share = |limit: Option<u64>, spent: u64, promised: u64| {
            limit.map(|l| l.saturating_sub(spent + promised) / sharers)
        };
        let micro_usd = share(self.limits.micro_usd, spent.micro_usd, promised.micro_usd);
        let ms = share(self.limits.ms, spent.ms, promised.ms);
        let tokens = share(self.limits.tokens, spent.tokens, promised.tokens);
        let n = steps as u64;
        let promise = Amounts {
            micro_usd: micro_usd.unwrap_or(0) * n,
            invocations: steps as u32,
            ms: ms.unwrap_or(0) * n,
            tokens: tokens.unwrap_or(0) * n,
            premium_milli: 0,
        };
        book.promised = add(book.promised, promise);
        book.holders += steps;
        Ok(Draw {
            micro_usd,
            ms,
            tokens,
            steps,
            promised: promise,
        })
    }

    /// The round of `draw` ended, having spent `spent`: its promise is released.
    pub fn settle(&self, draw: Draw, spent: Amounts) {
        let mut book = self.book();
        book.promised = Amounts {
            micro_usd: book
                .promised
                .micro_usd
                .saturating_sub(draw.promised.micro_usd),
            invocations: book
                .promised
                .invocations
                .saturating_sub(draw.promised.invocations),
            ms: book.promised.ms.saturating_sub(draw.promised.ms),
            tokens: book.promised.tokens.saturating_sub(draw.promised.tokens),
            premium_milli: book.promised.premium_milli,
        };
        book.holders = book.holders.saturating_sub(draw.steps);
        book.spent = add(book.spent, spent);
    }

    /// Its limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// What is spent so far.
    pub fn spent(&self) -> Amounts {
        self.book().spent
    }
}

fn add(a: Amounts, b: Amounts) -> Amounts {
    Amounts {
        micro_usd: a.micro_usd + b.micro_usd,
        invocations: a.invocations + b.invocations,
        ms: a.ms + b.ms,
        tokens: a.tokens + b.tokens,
        premium_milli: a.premium_milli + b.premium_milli,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dollars(usd: f64) -> u64 {
        (usd * 1e6) as u64
    }

    #[test]
    fn rounds_in_flight_share_what_is_left_and_never_hold_more() {
        let limits = Limits {
            micro_usd: Some(dollars(3.0)),
            ms: Some(60_000),
            ..Limits::default()
        };
        let purse = Purse::new(limits, Amounts::default(), 2);
        let a = purse.draw(1).unwrap();
        assert_eq!((a.micro_usd, a.ms), (Some(dollars(1.5)), Some(30_000)));
        let b = purse.draw(1).unwrap();
        assert_eq!(
            b.micro_usd,
            Some(dollars(1.5)),
            "the rest, for the other slot"
        );
        // A spends less than its share: what it did not spend goes back.
        purse.settle(
            a,
            Amounts {
                micro_usd: dollars(0.5),
                invocations: 1,
                ms: 10_000,
                ..Amounts::default()
            },
        );
        let c = purse.draw(1).unwrap();
        assert_eq!(c.micro_usd, Some(dollars(1.0)));
        assert_eq!(c.ms, Some(20_000));
        purse.settle(
            b,
            Amounts {
                micro_usd: dollars(1.5),
                ..Amounts::default()
            },
        );
        purse.settle(
            c,
            Amounts {
                micro_usd: dollars(1.0),
                ..Amounts::default()
            },
        );
        // Everything is spent: nothing more starts.
        assert_eq!(
            purse.draw(1).unwrap_err(),
            Exhausted::Usd {
                limit: dollars(3.0),
                spent: dollars(3.0)
            }
        );
        assert_eq!(purse.spent().invocations, 1);
    }

    #[test]
    fn tokens_are_shared_and_settled_as_dollars_are() {
        let limits = Limits {
            tokens: Some(10_000),
            ..Limits::default()
        };
        let spent = Amounts {
            tokens: 2_000,
            ..Amounts::default()
        };
        let purse = Purse::new(limits, spent, 2);
        let a = purse.draw(1).unwrap();
        let b = purse.draw(1).unwrap();
        assert_eq!(
            (a.tokens, b.tokens, a.micro_usd),
            (Some(4_000), Some(4_000), None)
        );
        // One spent a request past its share (it is stopped within one), the other less.
        let spent = |tokens| Amounts {
            tokens,
            ..Amounts::default()
        };
        purse.settle(a, spent(5_000));
        purse.settle(b, spent(1_000));
        // 2,000 left, shared between the two slots.
        let c = purse.draw(1).unwrap();
        assert_eq!(c.tokens, Some(1_000));
        purse.settle(c, spent(2_000));
        assert_eq!(
            purse.draw(1).unwrap_err(),
            Exhausted::Tokens {
                limit: 10_000,
                spent: 10_000
            }
        );
    }

    #[test]
    fn invocations_in_flight_count_against_the_limit() {
        let limits = Limits {
            invocations: Some(3),
            ..Limits::default()
        };
        let spent = Amounts {
            invocations: 1,
            ..Amounts::default()
        };
        let purse = Purse::new(limits, spent, 4);
        let two = purse.draw(2).unwrap();
        assert_eq!(
            (two.micro_usd, two.ms),
            (None, None),
            "nothing else is limited"
        );
        assert_eq!(
            purse.draw(1).unwrap_err(),
            Exhausted::Invocations {
                limit: 3,
                used: 3,
                wanted: 1
            }
        );
        purse.settle(
            two,
            Amounts {
                invocations: 1,
                ..Amounts::default()
            },
        );
        assert!(purse.draw(1).is_ok(), "one of the two never ran");
    }

    #[test]
    fn time_spent_stops_the_next_round() {
        let limits = Limits {
            ms: Some(1_000),
            ..Limits::default()
        };
        let purse = Purse::new(limits, Amounts::default(), 1);
        let round = purse.draw(3).unwrap();
        assert_eq!(round.ms, Some(333), "a round's steps share the slot's time");
        purse.settle(
            round,
            Amounts {
                ms: 1_200,
                ..Amounts::default()
            },
        );
        assert_eq!(
            purse.draw(1).unwrap_err(),
            Exhausted::Time {
                limit: 1_000,
                spent: 1_200
            }
        );
    }

    /// Premium requests are known only once a CLI ends: nothing is shared out, and the
    /// round after the one that reached them does not start.
    #[test]
    fn premium_requests_spent_stop_the_next_round() {
        let limits = Limits {
            premium_milli: Some(2_000),
            ..Limits::default()
        };
        let purse = Purse::new(limits, Amounts::default(), 2);
        let spent = |premium_milli| Amounts {
            premium_milli,
            ..Amounts::default()
        };
        let (a, b) = (purse.draw(1).unwrap(), purse.draw(1).unwrap());
        purse.settle(a, spent(1_000));
        let c = purse.draw(1).unwrap();
        purse.settle(b, spent(1_000));
        purse.settle(c, spent(330));
        assert_eq!(
            purse.draw(1).unwrap_err(),
            Exhausted::PremiumRequests {
                limit: 2_000,
                spent: 2_330
            }
        );
    }
}
